package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"html"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/oauth"
	"github.com/toolshed/toolshed/search"
)

// A server whose config says oauth.perUser is called by each user of the HTTP front
// with that user's own sign-in (docs/auth.md, "Each user signs in"): toolshed's own
// credential (`toolshed auth login`) only lists its tools. A user's first call finds
// no credential of theirs and is answered with a URL-mode elicitation (MCP
// 2025-11-25, error -32042) whose link is toolshed's own page /signin/ID: the page
// checks that whoever opened it is the user the call came from (the phishing the MCP
// specification warns of: a link passed to someone else must not sign them in for
// its sender) before it sends the browser to the server's authorization server,
// which sends it back to /signin/callback (see oauth.Hub). The credential is stored
// under the user (oauth.Key), and that user's calls, and only theirs, are signed
// with it (oauth.Users).

// NeedsUserSignIn is the activity log's outcome of a call refused until its user has
// signed in to the server.
const NeedsUserSignIn = "needs_sign_in"

// perUser reports whether each user calls u with their own sign-in.
func (u *Upstream) perUser() bool {
	return u.cfg.OAuth != nil && u.cfg.OAuth.PerUser && !u.cfg.OAuth.Disabled && u.cfg.Type == config.HTTP && u.g.opts.Credentials != nil
}

// noUser is the credential of a front without tokens: its clients are one user,
// toolshed's own, whose calls use the gateway's sign-in.
var noUser = credential(sha256.Sum256(nil))

// userOf names the user of principal p for per-user sign-in: a digest of the
// credential that identifies them (the hash of their bearer token, or of their
// OAuth issuer and subject), so that stores keep no token. "" for the gateway's
// own clients, whose calls use its own sign-in: stdio, a front without tokens, and
// the gateway's own token (HTTPOptions.Token, see ownCred).
func (g *Gateway) userOf(p principal) string {
	if p.cred == (credential{}) || p.cred == noUser {
		return ""
	}
	if own := g.ownCred.Load(); own != nil && p.cred == *own {
		return ""
	}
	return userDigest(p.cred)
}

func userDigest(c credential) string {
	h := sha256.Sum256(append([]byte("toolshed-user\x00"), c[:]...))
	return hex.EncodeToString(h[:16])
}

// callUser is who u's call by principal p is made for: its user for a per-user
// server, else "".
func (u *Upstream) callUser(p principal) string {
	if !u.perUser() {
		return ""
	}
	return u.g.userOf(p)
}

// asUser is ctx naming, for a per-user server, the user of session ss: its requests
// for ss (prompts, resources, completions) are then signed with that user's own
// credential, as its calls are.
func (u *Upstream) asUser(ctx context.Context, ss *mcp.ServerSession) context.Context {
	if user := u.callUser(u.g.clients.principalOf(ss)); user != "" {
		return oauth.WithUser(ctx, user)
	}
	return ctx
}

// usersTransport wraps the gateway's own transport of a per-user server (shared)
// into one that signs each user's requests with that user's credential.
func (u *Upstream) usersTransport(shared http.RoundTripper) *oauth.Users {
	return &oauth.Users{Server: u.oauthServer(), Store: u.g.opts.Credentials, Base: http.DefaultTransport, Shared: shared}
}

// signInStatePrefix starts the requestState of a per-user sign-in asked of a
// 2026-07-28 client (see needsSignIn); it shares the approvals' table and checks.
const signInStatePrefix = "signin."

// signInInput is the input request id of that question.
const signInInput = "toolshed-signin"

// signInWait bounds how long the retry of a call whose user accepted to sign in
// waits for that sign-in to end before it answers.
const signInWait = 2 * time.Minute

func isSignInState(state string) bool { return strings.HasPrefix(state, signInStatePrefix) }

// needsSignIn answers a call of a per-user server by a user who has not signed in to
// it: for a 2026-07-28 client that can open links, an input_required result asking it
// to open toolshed's sign-in page (URL-mode elicitation riding the multi round-trip
// flow, as that revision has it), whose retry waits for the sign-in and then lets the
// call go on; for an older one, the URL-mode elicitation error -32042 of 2025-11-25;
// for any other, a tool error that says where to go. ok is false when the call goes
// on, with spec (the retry's sign-in answer taken out of it).
func (r *callRegistry) needsSignIn(ctx context.Context, spec callSpec, u *Upstream, finish func(*mcp.CallToolResult, string) (*mcp.CallToolResult, error)) (_ callSpec, res *mcp.CallToolResult, err error, ok bool) {
	who := r.g.clients.principalOf(spec.req.Session)
	user := u.callUser(who)
	retry := isSignInState(spec.req.Params.RequestState)
	if retry {
		// The answer to a sign-in question toolshed asked this call: taken out of the
		// call, which may go on to its approval question.
		r.mu.Lock()
		asked := r.approvals.take(spec.req.Params.RequestState, who, spec.tool.Qualified, spec.args, time.Now())
		r.mu.Unlock()
		if !asked || user == "" {
			res, err := refuseState(finish, fmt.Sprintf("the sign-in question this retry answers was not asked for this call, or was answered already, or more than %v ago; call %s again", pendingTimeout, spec.tool.Qualified))
			return spec, res, err, true
		}
		answer, _ := spec.req.Params.InputResponses[signInInput].(*mcp.ElicitResult)
		params := *spec.req.Params
		params.RequestState, params.InputResponses = "", nil
		for k, v := range spec.req.Params.InputResponses {
			if k != signInInput {
				if params.InputResponses == nil {
					params.InputResponses = mcp.InputResponseMap{}
				}
				params.InputResponses[k] = v
			}
		}
		req := *spec.req
		req.Params = &params
		spec.req = &req
		if answer == nil || answer.Action != "accept" {
			res, _ := finish(errorResult(PermissionDenied, "the user did not open the sign-in page of %s, so the call was not made; do not retry it without asking the user", u.cfg.Name), NeedsUserSignIn)
			return spec, res, nil, true
		}
	}
	if user == "" {
		return spec, nil, nil, false
	}
	users := u.users()
	if users == nil || users.SignedIn(ctx, user) {
		return spec, nil, nil, false
	}
	hub, public := r.g.signIns()
	if hub == nil {
		res, _ := finish(errorResult(search.Unavailable, "%s needs each user to sign in with their own account, and this toolshed has no public URL for its sign-in page: its operator must serve it over HTTP with --public-url", u.cfg.Name), NeedsUserSignIn)
		return spec, res, nil, true
	}
	p, err := hub.Begin(ctx, oauth.Server{Name: u.cfg.Name, URL: u.cfg.URL, Headers: u.cfg.Headers, SignIn: true, User: user})
	if err != nil {
		res, _ := finish(errorResult(search.Unavailable, "%s needs you to sign in with your own account, and the sign-in could not start: %v", u.cfg.Name, err), NeedsUserSignIn)
		return spec, res, nil, true
	}
	link := public + "/signin/" + p.ID
	if retry {
		// The user agreed to open the page: the call waits for the sign-in.
		wait, cancel := context.WithTimeout(ctx, signInWait)
		select {
		case <-p.Done():
		case <-wait.Done():
		}
		cancel()
		if users.SignedIn(ctx, user) {
			return spec, nil, nil, false
		}
		res, _ := finish(errorResult(search.Unavailable, "%s: the sign-in at %s has not ended (%v); call the tool again once the page says you are signed in", u.cfg.Name, link, errOr(p.Err(), "still waiting")), NeedsUserSignIn)
		return spec, res, nil, true
	}
	msg := fmt.Sprintf("%s needs you to sign in with your own account before toolshed can call it for you. Open the link, confirm it is you, and sign in.", u.cfg.Name)
	switch {
	case canElicitURL(spec.req) && speaksMRTR(spec.req):
		r.mu.Lock()
		state := r.approvals.issue(signInStatePrefix, who, spec.tool.Qualified, spec.args, time.Now())
		r.mu.Unlock()
		return spec, &mcp.CallToolResult{RequestState: state, InputRequests: mcp.InputRequestMap{signInInput: &mcp.ElicitParams{Mode: "url", URL: link, Message: msg}}}, nil, true
	case canElicitURL(spec.req):
		finish(errorResult(search.Unavailable, "%s", msg), NeedsUserSignIn)
		return spec, nil, mcp.URLElicitationRequiredError([]*mcp.ElicitParams{{Mode: "url", ElicitationID: p.ID, URL: link, Message: msg + " Then call the tool again."}}), true
	}
	res, _ = finish(errorResult(search.Unavailable, "%s needs you to sign in with your own account before toolshed can call it for you, and your client cannot open links for you (it does not declare URL-mode elicitation). Open %s in a browser, confirm it is you, sign in, then call the tool again (the link is valid until %s).",
		u.cfg.Name, link, p.Expires.UTC().Format(time.RFC3339)), NeedsUserSignIn)
	return spec, res, nil, true
}

// errOr is err's text, or def for none.
func errOr(err error, def string) string {
	if err == nil {
		return def
	}
	return err.Error()
}

// canElicitURL reports whether the caller of req declared URL-mode elicitation.
func canElicitURL(req mcp.Request) bool {
	c := callerOf(req)
	return c.caps != nil && c.caps.Elicitation != nil && c.caps.Elicitation.URL != nil
}

// users is u's per-user transport, once its connection has one.
func (u *Upstream) users() *oauth.Users {
	u.mu.Lock()
	defer u.mu.Unlock()
	us, _ := u.base.(*oauth.Users)
	return us
}

// signIns returns the hub of per-user sign-ins and toolshed's public URL, or nil
// when the HTTP front has no public URL.
func (g *Gateway) signIns() (*oauth.Hub, string) {
	g.hubMu.Lock()
	defer g.hubMu.Unlock()
	return g.hub, g.publicURL
}

// handleSignIn serves the pages of per-user sign-in on mux, at public (toolshed's
// public URL): /signin/ID (who are you?), /signin/callback (the authorization
// server's answer). Without a credential store, or without a per-user server, it
// serves nothing.
func (g *Gateway) handleSignIn(mux *http.ServeMux, public string, a *httpAuth) {
	if g.opts.Credentials == nil || public == "" {
		return
	}
	some := false
	for _, u := range g.upstreams {
		some = some || u.perUser()
	}
	if !some {
		return
	}
	public = strings.TrimSuffix(public, "/")
	pages := &signInPages{g: g, hub: &oauth.Hub{CallbackURL: public + "/signin/callback", Store: g.opts.Credentials, Options: g.signInOptions}}
	if f := a.oauth; f != nil {
		// A user signed in with OAuth proves who they are by signing in there again,
		// in the browser; the answer comes back to the same callback as the sign-ins'.
		pages.front = f
		pages.confirm = &oauth.Confirmer{Issuer: f.issuer, Resource: f.base, RedirectURL: pages.hub.CallbackURL, Scopes: f.scopes, Store: g.opts.Credentials}
	}
	g.hubMu.Lock()
	g.hub, g.publicURL = pages.hub, public
	g.hubMu.Unlock()
	mux.HandleFunc("GET /signin/callback", pages.callback)
	mux.HandleFunc("GET /signin/{id}/confirm", pages.confirmStart)
	mux.HandleFunc("/signin/{id}", pages.connect)
}

// signInPages are the pages of per-user sign-in.
type signInPages struct {
	g       *Gateway
	hub     *oauth.Hub
	front   *oauthFront      // the OAuth front, nil without one
	confirm *oauth.Confirmer // checks an OAuth user's browser, nil without a front
}

// callback takes the answer of a sign-in, or of an identity check (see confirmStart).
func (s *signInPages) callback(w http.ResponseWriter, r *http.Request) {
	if s.confirm == nil || !s.confirm.Owns(r.URL.Query().Get("state")) {
		s.hub.ServeCallback(w, r)
		return
	}
	next, tok, err := s.confirm.Finish(r.Context(), r)
	p, ok := s.hub.Lookup(next)
	switch {
	case !ok:
		signInPage(w, http.StatusNotFound, "This sign-in link is unknown or has expired. Call the tool again for a new one.", "")
		return
	case err != nil:
		signInPage(w, http.StatusBadRequest, fmt.Sprintf("Could not check who you are: %v.", err), "")
		return
	}
	info, err := s.front.opts.Verifier.VerifyAudience(r.Context(), tok, s.front.audience, s.front.base)
	if err != nil || subtle.ConstantTimeCompare([]byte(userDigest(oauthCred(s.front.issuer, info.UserID))), []byte(p.User)) != 1 {
		signInPage(w, http.StatusForbidden, "You signed in as someone else than the user this sign-in was started for. Only the user whose call asked for it can use this link.", "")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, p.AuthURL(), http.StatusSeeOther)
}

// confirmStart sends the browser to the OAuth front's authorization server, to learn
// who its user is.
func (s *signInPages) confirmStart(w http.ResponseWriter, r *http.Request) {
	p, ok := s.hub.Lookup(r.PathValue("id"))
	if !ok || s.confirm == nil {
		signInPage(w, http.StatusNotFound, "This sign-in link is unknown or has expired. Call the tool again for a new one.", "")
		return
	}
	u, err := s.confirm.Start(r.Context(), p.ID)
	if err != nil {
		signInPage(w, http.StatusBadGateway, fmt.Sprintf("Could not start checking who you are: %v.", err), "")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, u, http.StatusSeeOther)
}

// signInOptions are the sign-in options of a server's config (its client, scopes).
func (g *Gateway) signInOptions(srv oauth.Server) oauth.LoginOptions {
	var o oauth.LoginOptions
	if u := g.byName[srv.Name]; u != nil && u.cfg.OAuth != nil {
		si := u.cfg.OAuth
		o.ClientID, o.ClientSecret, o.ClientMetadataURL, o.Scopes = si.ClientID, si.ClientSecret, si.ClientMetadataURL, si.Scopes
	}
	return o
}

// connect is /signin/ID: GET shows who the sign-in is for and asks for the toolshed
// token of the user whose call started it (or, with an OAuth front, offers to sign in
// there); POST checks the token and sends the browser on to the authorization
// server. A link passed to someone else is of no use to them: they do not have its
// user's token, nor sign in as its user.
func (s *signInPages) connect(w http.ResponseWriter, r *http.Request) {
	p, ok := s.hub.Lookup(r.PathValue("id"))
	if !ok {
		signInPage(w, http.StatusNotFound, "This sign-in link is unknown or has expired. Call the tool again for a new one.", "")
		return
	}
	switch r.Method {
	case http.MethodGet:
		msg := fmt.Sprintf("%s asks you to sign in with your own account. To check that this link is yours, enter the toolshed token your client uses; you are then sent to the server's sign-in page.", p.Server)
		if s.confirm != nil {
			msg = fmt.Sprintf("%s asks you to sign in with your own account. To check that this link is yours, sign in as you do for toolshed (or enter the toolshed token your client uses); you are then sent to the server's sign-in page.", p.Server)
		}
		signInPage(w, http.StatusOK, msg, "form")
		if s.confirm != nil {
			fmt.Fprintf(w, "<p><a id=oauth href=\"%s/confirm\">Sign in at %s</a></p>\n", html.EscapeString(p.ID), html.EscapeString(s.confirm.Issuer))
		}
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		tok := strings.TrimSpace(r.PostFormValue("token"))
		if tok == "" || subtle.ConstantTimeCompare([]byte(userDigest(sha256.Sum256([]byte(tok)))), []byte(p.User)) != 1 {
			// Said the same whether the token is another user's or no token at all.
			signInPage(w, http.StatusForbidden, "That is not the token of the client this sign-in was started for. Only the user whose call asked for it can use this link.", "form")
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, p.AuthURL(), http.StatusSeeOther)
	default:
		w.Header().Set("Allow", "GET, POST")
		signInPage(w, http.StatusMethodNotAllowed, "This page takes GET and POST only.", "")
	}
}

// signInPage writes a page of per-user sign-in: msg, and the token form when form is
// "form".
func signInPage(w http.ResponseWriter, status int, msg, form string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><title>toolshed sign-in</title>\n<p id=message>%s</p>\n", html.EscapeString(msg))
	if form == "form" {
		fmt.Fprint(w, "<form method=post id=confirm><label>toolshed token <input type=password name=token autocomplete=off required></label> <button type=submit>Continue</button></form>\n")
	}
}
