package script

// TokenRaise is the script that raises a lock's fencing counter: quorum's
// write-back of the token it chose.
var TokenRaise = load("token_raise")
