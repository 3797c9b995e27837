-- wrk script of the load check: POST /v1/limits/member/api for members
-- 0..9999 in turn, one JSON body per request.
local n = 0
request = function()
  n = n + 1
  local body = '{"subject":{"member":"' .. (n % 10000) .. '"}}'
  return wrk.format("POST", "/v1/limits/member/api", {["Content-Type"] = "application/json"}, body)
end
