//go:build !linux

package pgtest

import "errors"

func start(string) (*Server, func(), error) {
	return nil, nil, errors.New("pgtest starts PostgreSQL on Linux only")
}
