package testupstream

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// RequireAllEnv is the environment variable that turns a missing system program from a
// skip into a failure: .ci/run sets it, so that CI runs every test or fails.
const RequireAllEnv = "TOOLSHED_TEST_REQUIRE_ALL"

// Missing ends t because a system program it needs is not installed: what names the
// program, install says how to install it and err how it was looked for. Without
// TOOLSHED_TEST_REQUIRE_ALL the test is skipped with a message that says all this
// (scripts/test.sh lists the skipped tests with their messages at its end); with it the
// test fails.
func Missing(t testing.TB, what, install string, err error) {
	t.Helper()
	msg := fmt.Sprintf("%s is not installed (%v): install it with `%s`", what, err, install)
	if os.Getenv(RequireAllEnv) != "" {
		t.Fatalf("%s; %s is set, so a missing program fails the test", msg, RequireAllEnv)
	}
	t.Skipf("%s; the test is skipped (it fails instead where %s=1, as in CI)", msg, RequireAllEnv)
}

// Program returns the path of the first of names found on PATH (a name with a slash is
// tried as it is), or ends the test with Missing.
func Program(t testing.TB, what, install string, names ...string) string {
	t.Helper()
	var errs []error
	for _, name := range names {
		p, err := exec.LookPath(name)
		if err == nil {
			return p
		}
		errs = append(errs, err)
	}
	Missing(t, what, install, errors.New(strings.ReplaceAll(errors.Join(errs...).Error(), "\n", "; ")))
	return ""
}
