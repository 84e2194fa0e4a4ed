-- token_check: token_check(key) reads the fencing counter and returns an
-- error message when a draw would fail on it, else nil (a key of another
-- type raises WRONGTYPE): for a script that must write before it knows
-- whether it draws (a fair lock prunes its queue first), so that token_draw
-- cannot fail after. Apart from lib/token.lua, so that the scripts that do
-- not call it do not define it on every run.
--
-- Needs in scope: token_odd (lib/token.lua).
local function token_check(key)
  local cur = redis.call('get', key)
  if not cur then
    return nil
  end
  local _, err = token_odd(key, cur)
  return err
end
