// Package searchlog records what agents search for and what they then call, so that
// toolshed can tell which tools its search fails to surface and learn from the searches
// that worked. A Log writes in batches off the request path, to an embedded SQLite
// database by default or to PostgreSQL, which several gateway replicas share.
//
// Argument values are never recorded; query text can be turned off or hashed. The
// records are package record's; they are named here too.
package searchlog

import rec "github.com/toolshed/toolshed/searchlog/record"

// The records of the log (see package record).
type (
	Search   = rec.Search
	Hit      = rec.Hit
	Call     = rec.Call
	Evidence = rec.Evidence
)

// Call outcomes (see package record).
const (
	OutcomeOK          = rec.OutcomeOK
	OutcomeToolError   = rec.OutcomeToolError
	OutcomeFailed      = rec.OutcomeFailed
	OutcomeTimeout     = rec.OutcomeTimeout
	OutcomeCancelled   = rec.OutcomeCancelled
	OutcomeUnavailable = rec.OutcomeUnavailable
)
