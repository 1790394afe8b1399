package drivers

// LostReason says why a held lock was lost. Its values are the ErrLost*
// errors below: compare a *LostError's Reason with ==, or any error with
// errors.Is(err, ErrLostExpired) and so on.
type LostReason uint8

// Why a held lock was lost. Each is a constant error, so no caller can
// reassign it.
const (
	// ErrLostExpired: the TTL, as estimated by the holder and less its
	// safety margin, ran out before the work was done, without a refresh
	// error to blame (no refresh was asked for, or the process stalled).
	// The backend may still hold the grant for a little while.
	ErrLostExpired LostReason = iota + 1
	// ErrLostTaken: the backend answered that this owner no longer holds
	// the lock: it expired there and may have been granted to another
	// owner, or someone force-released it.
	ErrLostTaken
	// ErrLostUnreachable: refreshes kept failing (the backend was down or
	// too slow to answer) until the safety margin before the TTL. The
	// LostError's Cause is the last refresh error.
	ErrLostUnreachable
	// ErrLostClosed: the Manager was closed or shut down while the lock
	// was held. It also matches ErrClosed.
	ErrLostClosed
	// ErrLostRefused: a refresh was refused because of the credentials:
	// the token was revoked (401) or lost the right to the key (403). The
	// backend answered, and will refuse every refresh and the release
	// alike, so the loss is reported at once, not at the safety margin
	// (retrying would only shorten the time the holder has to stop). The
	// LostError's Cause is the refusal: it matches ErrUnauthorized or
	// ErrForbidden. The backend still holds the grant until its TTL runs
	// out.
	ErrLostRefused
	// ErrLostMaxHold: the grant reached its cap on total hold time
	// (WithMaxHold): the backend lets no refresh take it past the cap, so
	// the holder is told a safety margin before the cap, refreshing or not.
	ErrLostMaxHold
)

func (r LostReason) Error() string { return "lock: lost: " + r.text() }

// Is makes ErrLostClosed match ErrClosed, so that code that checks for a
// closed Manager keeps working.
func (r LostReason) Is(target error) bool { return r == ErrLostClosed && target == ErrClosed }

func (r LostReason) text() string {
	switch r {
	case ErrLostExpired:
		return "expired: the ttl, less the safety margin, ran out before the work was done"
	case ErrLostTaken:
		return "taken: the backend says this owner no longer holds it (expired there, taken over or force-released)"
	case ErrLostUnreachable:
		return "backend unreachable: refreshes failed until the safety margin before the ttl"
	case ErrLostClosed:
		return "manager closed or shut down while the lock was held"
	case ErrLostRefused:
		return "credentials refused: the backend refused the refresh (token revoked, or no longer allowed the key)"
	case ErrLostMaxHold:
		return "max hold: the grant reached its cap on total hold time, which no refresh extends"
	default:
		return "no longer held by this owner"
	}
}
