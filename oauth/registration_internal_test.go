package oauth

import (
	"testing"
	"time"
)

func TestRegistrationFits(t *testing.T) {
	now := time.Now()
	native := &Registration{Issuer: "https://as", ClientID: "c", ApplicationType: "native", RedirectURIs: []string{"http://127.0.0.1:4000/callback", "http://[::1]:4001/callback"}}
	web := &Registration{Issuer: "https://as", ClientID: "c", ApplicationType: "web", RedirectURIs: []string{"http://127.0.0.1:4000/callback"}}
	localhost := &Registration{Issuer: "https://as", ClientID: "c", ApplicationType: "native", RedirectURIs: []string{"http://localhost:4000/callback"}}
	expired := *native
	expired.ClientSecret, expired.SecretExpires = "s", now.Add(-time.Minute)
	for _, tc := range []struct {
		name     string
		r        *Registration
		issuer   string
		redirect string
		want     bool
	}{
		{"same URI", native, "https://as", "http://127.0.0.1:4000/callback", true},
		{"native, other port", native, "https://as", "http://127.0.0.1:5555/callback", true},
		{"native, IPv6 other port", native, "https://as", "http://[::1]:5555/callback", true},
		{"native, other path", native, "https://as", "http://127.0.0.1:5555/cb", false},
		{"native, other host", native, "https://as", "http://127.0.0.2:5555/callback", false},
		{"other issuer", native, "https://other", "http://127.0.0.1:4000/callback", false},
		{"web, other port", web, "https://as", "http://127.0.0.1:5555/callback", false},
		{"web, same URI", web, "https://as", "http://127.0.0.1:4000/callback", true},
		{"localhost, other port", localhost, "https://as", "http://localhost:5555/callback", false},
		{"secret expired", &expired, "https://as", "http://127.0.0.1:4000/callback", false},
		{"none", nil, "https://as", "http://127.0.0.1:4000/callback", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.fits(tc.issuer, tc.redirect, now); got != tc.want {
				t.Errorf("fits = %v, want %v", got, tc.want)
			}
		})
	}
}
