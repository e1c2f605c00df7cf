package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/oauth"
)

// runAuth is toolshed auth: signing in to the config's remote servers. The work is
// package oauth's; this reads the command line and the config and prints.
func runAuth(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("auth", flag.ContinueOnError)
	configFile := envDefault(fs.String("config", "", "the config `FILE` whose servers to sign in to (default $TOOLSHED_CONFIG)"), "TOOLSHED_CONFIG")
	credentials := envDefault(fs.String("credentials", "", "keep credentials in `FILE` (default $TOOLSHED_CREDENTIALS, else $XDG_DATA_HOME/toolshed/credentials.json)"), "TOOLSHED_CREDENTIALS")
	credentialsDB := addCredentialsDBFlag(fs)
	noBrowser := fs.Bool("no-browser", false, "login: print the URL to open, and open no browser")
	timeout := fs.Duration("timeout", 5*time.Minute, "login: how long to wait for the browser to come back, a `DURATION`")
	fs.Usage = func() {
		printUsage(stdout, fs, "[--config FILE] [--credentials FILE | --credentials-db DSN] [--no-browser] [--timeout DURATION] login|status|logout|rekey [SERVER]",
			"Signs toolshed in to the config's remote servers that ask for OAuth. "+
				"login SERVER opens the server's sign-in page in the browser (or prints its URL, over SSH), takes the answer on a loopback port and stores the credential. "+
				"status lists each remote server: signed in, expired but refreshable, or needs sign-in, with the expiry and the issuer. "+
				"logout SERVER revokes the tokens where the server supports it and forgets them. "+
				"rekey (with --credentials-db) seals every credential sealed with $TOOLSHED_TOKEN_KEY_PREVIOUS anew with $TOOLSHED_TOKEN_KEY, after which the previous key can go. "+
				"serve uses the stored credentials and refreshes them. No command prints a token.")
	}
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		return usageErr("say what to do: login SERVER, status, logout SERVER or rekey")
	}
	var cfg *config.Config
	if *configFile != "" {
		if cfg, err = loadConfig(*configFile, stderr); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	store, where, done, err := openCredentials(ctx, *credentials, *credentialsDB, false, stderr)
	if err != nil {
		return err
	}
	defer done()
	switch verb := rest[0]; verb {
	case "login", "logout":
		if len(rest) != 2 {
			return usageErr("%s takes one server name, such as toolshed auth %s github", verb, verb)
		}
		if verb == "logout" {
			return authLogout(ctx, cfg, store, rest[1], stdout)
		}
		s, err := remoteServer(cfg, *configFile, rest[1])
		if err != nil {
			return err
		}
		return authLogin(ctx, s, store, where, *noBrowser, *timeout, stdout)
	case "status":
		if len(rest) != 1 {
			return usageErr("status takes no server name; it lists them all")
		}
		return authStatus(ctx, cfg, store, where, stdout)
	case "rekey":
		rk, ok := store.(interface {
			Rekey(context.Context) (int, error)
		})
		switch {
		case len(rest) != 1:
			return usageErr("rekey takes no server name; it reseals them all")
		case !ok:
			return usageErr("rekey is for credentials in a database (--credentials-db DSN); a credentials file is not encrypted with a key")
		}
		n, err := rk.Rekey(ctx)
		if err != nil {
			return fmt.Errorf("resealed %d before: %w", n, err)
		}
		fmt.Fprintf(stdout, "Resealed %d with the current key in %s; TOOLSHED_TOKEN_KEY_PREVIOUS can go.\n", n, where)
		return nil
	default:
		return usageErr("%q is not an auth command; use login SERVER, status, logout SERVER or rekey", verb)
	}
}

func storePath(s *oauth.FileStore) (string, error) {
	if s.Path != "" {
		return s.Path, nil
	}
	return oauth.DefaultPath()
}

// remoteServer finds the remote server name in cfg.
func remoteServer(cfg *config.Config, file, name string) (config.Server, error) {
	if cfg == nil {
		return config.Server{}, usageErr("no config: give the one that has %s with --config FILE (or $TOOLSHED_CONFIG)", name)
	}
	var names []string
	for _, s := range cfg.Servers {
		if s.URL != "" {
			names = append(names, s.Name)
		}
		if s.Name != name {
			continue
		}
		switch {
		case s.URL == "":
			return s, fmt.Errorf("%s is a local (stdio) server in %s; only remote servers sign in", name, file)
		case s.OAuth != nil && s.OAuth.Disabled:
			return s, fmt.Errorf("sign-in is turned off for %s in %s (oauth: false); remove that to sign in", name, file)
		}
		return s, nil
	}
	return config.Server{}, fmt.Errorf("%s has no server %q; its remote servers are: %s", file, name, strings.Join(names, ", "))
}

func authLogin(ctx context.Context, s config.Server, store oauth.Store, where string, noBrowser bool, timeout time.Duration, stdout io.Writer) error {
	opts := oauth.LoginOptions{Store: store, Out: stdout, NoBrowser: noBrowser}
	if o := s.OAuth; o != nil {
		opts.ClientID, opts.ClientSecret, opts.ClientMetadataURL = o.ClientID, o.ClientSecret, o.ClientMetadataURL
		opts.Scopes, opts.CallbackPort, opts.RedirectURL = o.Scopes, o.CallbackPort, o.RedirectURI
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := oauth.Login(ctx, oauth.Server{Name: s.Name, URL: s.URL, Headers: s.Headers}, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nSigned in to %s (issuer %s", s.Name, c.Issuer)
	if len(c.Scopes) > 0 {
		fmt.Fprintf(stdout, ", scopes %s", strings.Join(c.Scopes, " "))
	}
	if !c.Expiry.IsZero() {
		fmt.Fprintf(stdout, ", token expires %s", c.Expiry.Local().Format(time.DateTime))
	}
	fmt.Fprintf(stdout, ").\nThe credential is stored in %s.\n", where)
	return nil
}

func authLogout(ctx context.Context, cfg *config.Config, store oauth.Store, name string, stdout io.Writer) error {
	srv := oauth.Server{Name: name}
	if cfg != nil {
		for _, s := range cfg.Servers {
			if s.Name == name && s.URL != "" {
				srv.URL = s.URL
			}
		}
	}
	if srv.URL == "" { // not in the config (any more): by the name it was signed in as
		creds, err := store.List(ctx)
		if err != nil {
			return err
		}
		for _, c := range creds {
			if c.Server == name {
				srv.URL = c.URL
			}
		}
	}
	if srv.URL == "" {
		return fmt.Errorf("%w to a server named %q; toolshed auth status lists the servers signed in to", oauth.ErrNotSignedIn, name)
	}
	revoked, err := oauth.Logout(ctx, srv, store, nil)
	switch {
	case err != nil && !revoked && !errors.Is(err, oauth.ErrNotSignedIn):
		fmt.Fprintf(stdout, "Signed out of %s: the credential is forgotten.\n", name)
		return err
	case err != nil:
		return err
	case revoked:
		fmt.Fprintf(stdout, "Signed out of %s: its tokens are revoked at the server and the credential is forgotten.\n", name)
	default:
		fmt.Fprintf(stdout, "Signed out of %s: the credential is forgotten (its authorization server has no revocation endpoint, so the token stays valid there until it expires).\n", name)
	}
	return nil
}

func authStatus(ctx context.Context, cfg *config.Config, store oauth.Store, where string, stdout io.Writer) error {
	creds, err := store.List(ctx)
	if err != nil {
		return err
	}
	byURL := map[string]*oauth.Credential{}
	users := map[string]int{} // server key -> the users signed in with their own account
	for _, c := range creds {
		if c.User != "" {
			base, _, _ := strings.Cut(c.URL, "#")
			users[base]++
			continue
		}
		byURL[c.URL] = c
	}
	usersNote := func(key string) string {
		n := users[key]
		delete(users, key)
		switch n {
		case 0:
			return ""
		case 1:
			return " (and 1 user's own sign-in)"
		}
		return fmt.Sprintf(" (and %d users' own sign-ins)", n)
	}
	now := time.Now()
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATE\tEXPIRES\tISSUER")
	row := func(name string, c *oauth.Credential, note string) {
		state, expires, issuer := string(oauth.StateOf(c, now)), "-", "-"
		if c != nil {
			issuer = c.Issuer
			if !c.Expiry.IsZero() && c.AccessToken != "" {
				expires = c.Expiry.Local().Format(time.DateTime)
			}
		}
		if state == string(oauth.NeedsSignIn) {
			state += ": run toolshed auth login " + name
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s%s\n", name, state, expires, issuer, note)
	}
	if cfg != nil {
		for _, s := range cfg.Servers {
			if s.URL == "" || s.OAuth != nil && s.OAuth.Disabled {
				continue
			}
			key, err := oauth.CanonicalURL(s.URL)
			if err != nil {
				continue
			}
			c := byURL[key]
			delete(byURL, key)
			if c == nil && len(s.Headers) > 0 && hasAuthorization(s.Headers) {
				fmt.Fprintf(tw, "%s\t%s\t-\t-\n", s.Name, "token in headers")
				continue
			}
			row(s.Name, c, usersNote(key))
		}
	}
	rest := make([]*oauth.Credential, 0, len(byURL))
	for _, c := range byURL {
		rest = append(rest, c)
	}
	slices.SortFunc(rest, func(a, b *oauth.Credential) int { return strings.Compare(a.Server, b.Server) })
	for _, c := range rest {
		note := ""
		if cfg != nil {
			note = " (not in the config)"
		}
		row(c.Server, c, note+usersNote(c.URL))
	}
	for _, key := range slices.Sorted(maps.Keys(users)) {
		fmt.Fprintf(tw, "%s\t-\t-\t-%s\n", key, usersNote(key))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nCredentials: %s\n", where)
	return nil
}

func hasAuthorization(h map[string]string) bool {
	for k := range h {
		if strings.EqualFold(k, "Authorization") {
			return true
		}
	}
	return false
}
