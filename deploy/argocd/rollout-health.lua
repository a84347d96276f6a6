-- Argo CD health check for EvaRollout (eva.aidonow.com/v1alpha1). Install it under the argocd-cm key
-- resource.customizations.health.eva.aidonow.com_EvaRollout (docs/gitops.md). It reads the conditions
-- summarizeRollout writes (src/status/summarize.ts); like health.lua, only comparisons and `..`.
--   Progressing: no status yet, a spec change not observed yet, Reconciling (moving, baking, rolling back)
--   Degraded:    Stalled (halted by a gate, rolled back, or cannot start: target absent, overlap, nothing to move)
--   Healthy:     Ready True (succeeded)
--   Suspended:   spec.paused, seen by the operator, with no batch in flight
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

local status = obj.status
if status == nil then return hs end
local conditions = status.conditions

-- The operator never looks at a succeeded or rolled-back rollout again, so a later spec edit leaves
-- observedGeneration behind for good: the ending stands.
local ended = status.phase == "Succeeded" or status.phase == "RolledBack"
local generation = obj.metadata and obj.metadata.generation
if not ended and generation ~= nil and (status.observedGeneration == nil or status.observedGeneration < generation) then
  hs.message = "the operator has not observed generation " .. generation .. " yet"
  return hs
end

local stalled = condition(conditions, "Stalled")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = said(stalled)
  return hs
end
local reconciling = condition(conditions, "Reconciling")
if reconciling ~= nil and reconciling.status == "True" then
  hs.message = said(reconciling)
  return hs
end
local ready = condition(conditions, "Ready")
if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = said(ready)
  return hs
end
-- Observed and nothing in flight (a batch in flight is still judged, and shows as Reconciling above).
if obj.spec ~= nil and obj.spec.paused == true then
  hs.status = "Suspended"
  hs.message = "paused (spec.paused: true)"
  if ready ~= nil then hs.message = said(ready) end
  return hs
end
if ready ~= nil then hs.message = said(ready) end
return hs
