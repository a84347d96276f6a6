-- Argo CD health check for EvaTenant (eva.aidonow.com/v1alpha1). Install it under the argocd-cm key
-- resource.customizations.health.eva.aidonow.com_EvaTenant (README, "GitOps"). Argo CD runs it
-- without Lua's string library: only comparisons and `..` here.
--   Suspended:   spec.suspend (reconciliation stopped) or hibernated (spec.lifecycle / phase Suspended)
--   Progressing: no status yet, a spec change not observed yet, provisioning, being deleted
--   Degraded:    Stalled (needs a change by the user: bad input, no operator serves it), phase Failed or Degraded
--   Healthy:     Ready True at the current generation (Active, or Decommissioned as asked)
-- On a multi-cluster hub (docs/multi-cluster.md) install it for ManifestWorks too, under the key
-- resource.customizations.health.work.open-cluster-management.io_ManifestWork: a tenant's work (label
-- eva.aidonow.com/tenant) is judged as the member's EvaTenant, rebuilt from the fields the engine fed
-- back and the summary the hub controller wrote at the work's generation (it knows when the member
-- stopped reporting); any other work by the engine's own conditions. And for Placements (key
-- ...health.cluster.open-cluster-management.io_Placement): Degraded while the engine places it nowhere.
local hs = { status = "Progressing", message = "waiting for the operator to report a status" }

local function condition(conditions, wanted)
  if conditions == nil then return nil end
  for _, c in ipairs(conditions) do
    if c.type == wanted then return c end
  end
  return nil
end

local function said(c)
  if c.message ~= nil and c.message ~= "" then return c.reason .. ": " .. c.message end
  return c.reason
end

local SUMMARY = { Ready = true, Reconciling = true, Stalled = true, Suspended = true }

-- A work that is not a tenant's: the engine's word (Applied, Available, Degraded).
local function engineHealth(conditions)
  local degraded = condition(conditions, "Degraded")
  if degraded ~= nil and degraded.status == "True" then return { status = "Degraded", message = said(degraded) } end
  local applied = condition(conditions, "Applied")
  if applied ~= nil and applied.status == "False" then return { status = "Degraded", message = said(applied) } end
  local available = condition(conditions, "Available")
  if available ~= nil and available.status == "True" then return { status = "Healthy", message = said(available) } end
  return { status = "Progressing", message = "waiting for the engine to apply the work" }
end

-- The fed-back values of a work's first manifest, by name.
local function fedBack(workStatus)
  local values = {}
  local manifests = workStatus.resourceStatus and workStatus.resourceStatus.manifests
  local feedback = manifests and manifests[1] and manifests[1].statusFeedback
  if feedback == nil or feedback.values == nil then return values end
  for _, v in ipairs(feedback.values) do
    local f = v.fieldValue or {}
    if f.type == "String" then values[v.name] = f.string
    elseif f.type == "Integer" then values[v.name] = f.integer
    elseif f.type == "Boolean" then values[v.name] = f.boolean end
  end
  return values
end

if obj.kind == "Placement" then
  local conditions = obj.status and obj.status.conditions
  -- The hub controller's Stalled (NoMemberMatches) on a tenant's, else the engine's own word.
  local stalled = condition(conditions, "Stalled")
  if stalled ~= nil and stalled.status == "True" then return { status = "Degraded", message = said(stalled) } end
  local satisfied = condition(conditions, "PlacementSatisfied")
  if satisfied ~= nil and satisfied.status == "True" then return { status = "Healthy", message = said(satisfied) } end
  if satisfied ~= nil and satisfied.status == "False" then return { status = "Degraded", message = said(satisfied) } end
  return { status = "Progressing", message = "waiting for the engine to decide" }
end

if obj.kind == "ManifestWork" then
  local workStatus = obj.status or {}
  local labels = obj.metadata.labels or {}
  if labels["eva.aidonow.com/tenant"] == nil then return engineHealth(workStatus.conditions) end
  local generation = obj.metadata.generation
  local summary = {}
  for _, c in ipairs(workStatus.conditions or {}) do
    if SUMMARY[c.type] and c.observedGeneration == generation then summary[#summary + 1] = c end
  end
  if #summary == 0 then
    hs.message = "waiting for the hub controller (eva-operator hub) to judge generation " .. generation .. " of the work"
    return hs
  end
  local values = fedBack(workStatus)
  obj = {
    metadata = { generation = values.generation, deletionTimestamp = obj.metadata.deletionTimestamp or values.deletionTimestamp },
    spec = { suspend = values.suspend, lifecycle = values.lifecycle },
    status = { phase = values.phase, observedGeneration = values.observedGeneration, conditions = summary },
  }
end

local spec = obj.spec or {}
local status = obj.status
local conditions = nil
if status ~= nil then conditions = status.conditions end

if spec.suspend == true then
  hs.status = "Suspended"
  hs.message = "reconciliation suspended (spec.suspend: true)"
  local suspended = condition(conditions, "Suspended")
  if suspended ~= nil and suspended.status == "True" then hs.message = said(suspended) end
  return hs
end
if spec.lifecycle == "Suspended" or (status ~= nil and status.phase == "Suspended") then
  hs.status = "Suspended"
  hs.message = "hibernated (spec.lifecycle: Suspended): modules scaled to zero, data kept"
  return hs
end
if status == nil then return hs end

local stalled = condition(conditions, "Stalled")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = said(stalled)
  return hs
end
if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  hs.message = "being deleted: the operator is decommissioning the tenant"
  return hs
end
local generation = obj.metadata and obj.metadata.generation
if generation ~= nil and (status.observedGeneration == nil or status.observedGeneration < generation) then
  hs.message = "the operator has not observed generation " .. generation .. " yet"
  return hs
end

local ready = condition(conditions, "Ready")
if status.phase == "Failed" or status.phase == "Degraded" then
  hs.status = "Degraded"
  hs.message = "phase " .. status.phase
  if ready ~= nil then hs.message = hs.message .. ": " .. said(ready) end
  return hs
end
if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = said(ready)
  return hs
end
if ready ~= nil then hs.message = said(ready) end
return hs
