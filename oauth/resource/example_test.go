package resource_test

import (
	"log"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/toolshed/toolshed/oauth/resource"
)

// A Verifier behind the go-sdk's auth.RequireBearerToken, with the metadata that tells
// clients where to sign in.
func ExampleVerifier() {
	v, err := resource.New(resource.Options{
		Issuer:   "https://login.example.com/realms/eng",
		Audience: "https://mcp.example.com/mcp",
		Scopes:   []string{"mcp:read"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()
	mux := http.NewServeMux()
	mux.Handle(resource.WellKnown+"/mcp", auth.ProtectedResourceMetadataHandler(v.Metadata()))
	protect := auth.RequireBearerToken(v.Verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: resource.MetadataURL("https://mcp.example.com/mcp"),
		Scopes:              v.Options().Scopes,
	})
	mux.Handle("/mcp", protect(http.NotFoundHandler())) // an MCP handler in practice
}
