--[[ A transition's options, the NAME value pairs after its positional
arguments (or none).
]]
--@include common

-- Options after the positional arguments: NAME value pairs, each at most once.
-- `spec` maps an upper-case name to its {lo, hi}, to {bytes = n} for a
-- string of 1 to n bytes, or to {check = f} for a value `f` reads (f(value),
-- value nil when missing: what to keep, or nil and an error reply); the
-- result maps it to its number (or string).
local function options(first, spec)
  local found = {}
  local i = first
  while i <= #ARGV do
    local name = string.upper(ARGV[i])
    local range = spec[name]
    if not range then
      return nil, emq_error('EMQARG', 'unknown option ' .. ARGV[i])
    end
    if found[name] then
      return nil, emq_error('EMQARG', name .. ' given twice')
    end
    local n, err = ARGV[i + 1], nil
    if range.bytes then
      if n == nil or #n == 0 or #n > range.bytes then
        return nil, emq_error('EMQARG', name .. ' must be 1 to ' .. range.bytes .. ' bytes')
      end
    elseif range.check then
      n, err = range.check(n)
      if err then return nil, err end
    else
      n, err = integer(n, name, range[1], range[2])
      if err then return nil, err end
    end
    found[name] = n
    i = i + 2
  end
  return found
end

-- No options may follow the positional arguments (a transition that takes none).
local function no_options_error(first)
  if ARGV[first] ~= nil then
    return emq_error('EMQARG', 'unknown option ' .. ARGV[first])
  end
end
