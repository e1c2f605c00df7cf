package oauth_test

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/toolshed/toolshed/oauth"
)

// Sign in once, as toolshed auth login does, then call the server with the stored
// credential, as serve does: the transport adds the token, refreshes it, and says
// when the user has to sign in again.
func Example() {
	ctx := context.Background()
	srv := oauth.Server{Name: "linear", URL: "https://mcp.linear.app/mcp"}
	store := &oauth.FileStore{} // $XDG_DATA_HOME/toolshed/credentials.json

	if !oauth.Ready(ctx, srv, store) {
		// Prints the URL to open (and opens the browser where there is one), and
		// waits for the authorization server to send the browser back.
		if _, err := oauth.Login(ctx, srv, oauth.LoginOptions{Store: store, Out: os.Stdout}); err != nil {
			fmt.Println(err)
			return
		}
	}
	t, err := oauth.NewTransport(ctx, srv, store, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	client := &http.Client{Transport: t} // for mcp.StreamableClientTransport's HTTPClient
	_ = client
}
