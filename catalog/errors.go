package catalog

import (
	"errors"
	"fmt"
)

// Errors a Problem or a lookup wraps; test for them with errors.Is.
var (
	// ErrNotJSON: a catalog file or tool list is not valid JSON.
	ErrNotJSON = errors.New("not valid JSON")
	// ErrFormat: the JSON is valid but not a tool list in any supported form.
	ErrFormat = errors.New("not a tool list")
	// ErrServerName: a server name cannot prefix qualified names.
	ErrServerName = errors.New("invalid server name")
	// ErrToolName: a tool has no usable name.
	ErrToolName = errors.New("invalid tool name")
	// ErrDuplicate: two tools would share one qualified name.
	ErrDuplicate = errors.New("duplicate tool")
	// ErrSchema: a tool's inputSchema or outputSchema is not a JSON Schema object.
	ErrSchema = errors.New("invalid schema")
	// ErrField: a tool field has the wrong JSON type.
	ErrField = errors.New("invalid field")
	// ErrUnknownTool: no tool has the name asked for.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrAmbiguous: a bare name matches tools of several servers.
	ErrAmbiguous = errors.New("ambiguous tool name")
)

// Problem is one thing that could not be loaded. The rest of the catalog loads without it.
type Problem struct {
	// Origin is where the tools came from: a file path, or an upstream server.
	Origin string
	// Server is the server name, when known.
	Server string
	// Tool is the tool's name, or "#N" (its position in the list) when it has none.
	Tool string
	// Err says what is wrong; it wraps one of the package's sentinel errors.
	Err error
}

func (p Problem) Error() string {
	where := p.Origin
	if p.Server != "" {
		where += fmt.Sprintf(": server %q", p.Server)
	}
	if p.Tool != "" {
		where += fmt.Sprintf(": tool %s", p.Tool)
	}
	if where == "" {
		return p.Err.Error()
	}
	return where + ": " + p.Err.Error()
}

func (p Problem) Unwrap() error { return p.Err }
