-- Argo CD health check for EvaTenant (eva.aidonow.com/v1alpha1). Install it under the argocd-cm key
-- resource.customizations.health.eva.aidonow.com_EvaTenant (README, "GitOps"). Argo CD runs it
-- without Lua's string library: only comparisons and `..` here.
--   Suspended:   spec.suspend (reconciliation stopped) or hibernated (spec.lifecycle / phase Suspended)
--   Progressing: no status yet, a spec change not observed yet, provisioning, being deleted
--   Degraded:    Stalled (needs a change by the user: bad input, no operator serves it), phase Failed or Degraded
--   Healthy:     Ready True at the current generation (Active, or Decommissioned as asked)
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
