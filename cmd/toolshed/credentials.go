package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/toolshed/toolshed/oauth"
	"github.com/toolshed/toolshed/oauth/sqlstore"
)

// credentialsDBUsage is the help of serve's and auth's --credentials-db.
const credentialsDBUsage = "keep the sign-in credentials in database `DSN` instead of a file, encrypted with the key in $TOOLSHED_TOKEN_KEY, for replicas to share: a postgres:// URL (or a SQLite file), which may be the search log's (default $TOOLSHED_CREDENTIALS_DB)"

// addCredentialsDBFlag adds --credentials-db to fs.
func addCredentialsDBFlag(fs *flag.FlagSet) *string {
	return envDefault(fs.String("credentials-db", "", credentialsDBUsage), "TOOLSHED_CREDENTIALS_DB")
}

// openCredentials returns the store of serve's or auth's flags: the database
// --credentials-db names, or else the file --credentials names (empty: the default
// file). where names it for messages, without a password; done closes it.
//
// later (serve's) makes a PostgreSQL database that cannot be reached yet no error:
// it is said on warn, and the store reaches it when it can (sqlstore.ErrUnreached).
func openCredentials(ctx context.Context, file, db string, later bool, warn io.Writer) (store oauth.Store, where string, done func(), err error) {
	if db == "" {
		fs := &oauth.FileStore{Path: file}
		if where, err = storePath(fs); err != nil {
			return nil, "", nil, err
		}
		return fs, where, func() {}, nil
	}
	if file != "" {
		return nil, "", nil, usageErr("--credentials FILE and --credentials-db DSN both name where credentials are: give one")
	}
	s, err := sqlstore.Open(ctx, db, sqlstore.Options{ConnectLater: later})
	switch {
	case s != nil && errors.Is(err, sqlstore.ErrUnreached):
		fmt.Fprintf(warn, "toolshed: credentials: %v; serving meanwhile: the servers that sign in wait for it, and it is tried again at each use\n", err)
	case err != nil:
		return nil, "", nil, err
	}
	return s, s.Where() + " (encrypted)", func() { s.Close() }, nil
}
