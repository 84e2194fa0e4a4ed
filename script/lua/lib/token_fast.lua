-- token_fast: the common case of a fencing token's draw, run inline where a
-- script has the counter's INCR in hand, included as "token_fast N KEY LEASE":
-- N the reply of that INCR (made with redis.pcall), KEY the counter, LEASE
-- its lease (ms). When N is a counter drawn from the clock that a Lua number
-- holds exactly, from 10^15 (every reading of a µs clock since 2001 is
-- above it) to below 2^53, KEY is PEXPIREd with LEASE and the script's
-- local `token` set to N, a number. Otherwise token stays nil, and the
-- script calls token_draw (lib/token.lua), which draws from a counter that
-- is new, odd or past 2^53.
--
-- This is the one place of the rule: every script that draws a token runs
-- it. It is code, not a function, because each function a script defines
-- is a closure Lua makes on every run that reaches it.
--
-- Needs in scope: a local token, nil; N, KEY and LEASE as given.
if type($1) == 'number' and $1 >= 1e15 and $1 < 9007199254740992 then
  redis.call('pexpire', $2, $3)
  token = $1
end
