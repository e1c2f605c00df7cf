package release

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction: its keyword in upper case and the rest of
// its line, continuation lines joined.
type instruction struct {
	cmd, args string
}

// stage is one FROM and the instructions under it.
type stage struct {
	from, name string
	steps      []instruction
}

// parseDockerfile reads the instructions of a Dockerfile by stage: the subset of the
// syntax the shipped Dockerfile uses (comments, backslash continuations, FROM ... AS).
// Instructions before the first FROM (global ARGs) are in a stage with no from.
func parseDockerfile(t *testing.T, path string) []stage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stages := []stage{{}}
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		cmd, args, _ := strings.Cut(line, " ")
		in := instruction{strings.ToUpper(cmd), strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			s := stage{from: in.args}
			if base, name, ok := strings.Cut(in.args, " AS "); ok {
				s.from, s.name = strings.TrimSpace(base), strings.TrimSpace(name)
			}
			stages = append(stages, s)
			return
		}
		stages[len(stages)-1].steps = append(stages[len(stages)-1].steps, in)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(line)
		flush()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	flush()
	if len(stages) < 3 {
		t.Fatalf("%s: want a build stage and a final stage, found %d stages", path, len(stages)-1)
	}
	return stages
}
