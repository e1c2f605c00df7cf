package searchlog

import (
	"context"
	"fmt"
	"time"
)

// Tool vectors: the embeddings of tools (package embed) kept in the log's database, so
// that gateway replicas sharing one PostgreSQL embed each tool once, and a restart
// embeds nothing. A vector is keyed by what it depends on: the model, the dimensions
// asked for, the document prefix, and the SHA-256 of the text embedded. Its bytes are
// embed's, opaque here. used is when a toolshed last loaded or stored it: vectors
// unused for MaxAge are pruned with the log's records.

// touchAfter is how stale used may grow before a load refreshes it: refreshing on
// every load would write every tool's row at each start of every replica.
const touchAfter = 24 * time.Hour

// touchAge is how stale used may grow before a load refreshes it in this log:
// touchAfter, or half of MaxAge when that is shorter, so that a vector just loaded is
// never old enough for prune to delete.
func (l *Log) touchAge() time.Duration {
	if l.opts.MaxAge > 0 {
		return min(touchAfter, l.opts.MaxAge/2)
	}
	return touchAfter
}

// LoadVectors returns the stored vectors among hashes for the model, dimensions and
// prefix, by hash. It satisfies embed.Store with SaveVectors.
func (l *Log) LoadVectors(ctx context.Context, model string, dimensions int, prefix string, hashes [][32]byte) (map[[32]byte][]byte, error) {
	want := make(map[[32]byte]bool, len(hashes))
	for _, h := range hashes {
		want[h] = true
	}
	rows, err := l.st.query(ctx, `SELECT hash, vector, used FROM tool_vectors WHERE model = ? AND dimensions = ? AND prefix = ?`, model, dimensions, prefix)
	if err != nil {
		return nil, fmt.Errorf("searchlog: reading tool vectors from %s: %w", l.st.where(), err)
	}
	defer rows.Close()
	out := map[[32]byte][]byte{}
	var stale [][]any
	now := time.Now()
	for rows.Next() {
		var hash, vec []byte
		var used int64
		if err := rows.Scan(&hash, &vec, &used); err != nil {
			return nil, fmt.Errorf("searchlog: reading tool vectors from %s: %w", l.st.where(), err)
		}
		var h [32]byte
		if len(hash) != len(h) || !want[[32]byte(hash)] {
			continue
		}
		h = [32]byte(hash)
		out[h] = vec
		if now.Sub(time.UnixMicro(used)) > l.touchAge() {
			stale = append(stale, []any{now.UnixMicro(), model, dimensions, prefix, hash})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("searchlog: reading tool vectors from %s: %w", l.st.where(), err)
	}
	rows.Close()
	if len(stale) > 0 {
		err := l.st.tx(ctx, func(q querier) error {
			return q.execMany(ctx, `UPDATE tool_vectors SET used = ? WHERE model = ? AND dimensions = ? AND prefix = ? AND hash = ?`, stale)
		})
		if err != nil {
			return out, fmt.Errorf("searchlog: marking tool vectors used in %s: %w", l.st.where(), err)
		}
	}
	return out, nil
}

// SaveVectors stores vectors for the model, dimensions and prefix, keeping a vector
// another replica stored first (the same text gives the same vector).
func (l *Log) SaveVectors(ctx context.Context, model string, dimensions int, prefix string, vecs map[[32]byte][]byte) error {
	if len(vecs) == 0 {
		return nil
	}
	now := time.Now().UnixMicro()
	args := make([][]any, 0, len(vecs))
	for h, v := range vecs {
		args = append(args, []any{model, dimensions, prefix, h[:], v, now})
	}
	err := l.st.tx(ctx, func(q querier) error {
		return q.execMany(ctx, `INSERT INTO tool_vectors (model, dimensions, prefix, hash, vector, used) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (model, dimensions, prefix, hash) DO NOTHING`, args)
	})
	if err != nil {
		return fmt.Errorf("searchlog: storing tool vectors in %s: %w", l.st.where(), err)
	}
	return nil
}
