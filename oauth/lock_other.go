//go:build !unix

package oauth

import "context"

// lockFile does nothing where there is no flock: processes sharing a credentials
// file are then not kept from refreshing the same credential at once.
func lockFile(ctx context.Context, path string) (func(), error) { return func() {}, nil }
