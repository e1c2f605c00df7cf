package sqlstore_test

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/toolshed/toolshed/oauth"
	"github.com/toolshed/toolshed/oauth/sqlstore"
)

// Replicas of a gateway share their sign-ins through the database they share: one
// `toolshed auth login` serves them all, and a refresh by one is seen by the others.
// The key is TOOLSHED_TOKEN_KEY, the same on every replica (a Kubernetes Secret).
func Example() {
	ctx := context.Background()
	store, err := sqlstore.Open(ctx, os.Getenv("TOOLSHED_CREDENTIALS_DB"), sqlstore.Options{})
	if err != nil {
		fmt.Println(err) // names TOOLSHED_TOKEN_KEY and how to make a key when it is missing
		return
	}
	defer store.Close()
	srv := oauth.Server{Name: "linear", URL: "https://mcp.linear.app/mcp"}
	t, err := oauth.NewTransport(ctx, srv, store, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	client := &http.Client{Transport: t} // for mcp.StreamableClientTransport's HTTPClient
	_ = client
}
