package testupstream

import (
	"io"
	"net/http"
	"testing"
)

// Request is an HTTP request with headers, as a test sends it to toolshed's fronts:
// "Host" sets the request's host (a web page's, a reverse proxy's), as curl -H does.
func Request(t testing.TB, method, url string, headers map[string]string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	return req
}
