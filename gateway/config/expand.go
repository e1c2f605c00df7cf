package config

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// expand replaces the variables in s, a string value at key:
//
//	${VAR}            the environment variable VAR; unset means "" and a Warning
//	${VAR:-default}   VAR, or default when VAR is unset or empty (default may hold variables)
//	${env:VAR}        VS Code's spelling of ${VAR}
//	${input:id}       a VS Code input: its default if inputs gives one, else ""; a Warning
//	                  either way, as the gateway cannot prompt
//	${workspaceFolder}, ${workspaceFolderBasename}, ${userHome}, ${cwd},
//	${pathSeparator}, ${/}   VS Code's predefined variables, when no such environment
//	                  variable is set
//
// Any other ${...} is left as written, with a Warning; a '$' not followed by '{' is
// always literal (no client uses $$ as an escape).
func (l *loader) expand(s, key string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		end := closingBrace(s, i+2)
		if end < 0 {
			l.warn(key, "%q has no closing '}', so it is not expanded; close it or remove the '${'", s[i:])
			b.WriteString(s[i:])
			return b.String()
		}
		b.WriteString(l.variable(s[i+2:end], s[i:end+1], key))
		s = s[end+1:]
	}
}

// closingBrace returns the index of the '}' that closes a "${" whose body starts at
// from, counting nested "${", or -1.
func closingBrace(s string, from int) int {
	depth := 0
	for i := from; i < len(s); i++ {
		switch {
		case s[i] == '$' && i+1 < len(s) && s[i+1] == '{':
			depth++
			i++
		case s[i] == '}':
			if depth == 0 {
				return i
			}
			depth--
		}
	}
	return -1
}

// variable expands the body of one ${...}; whole is the text as written.
func (l *loader) variable(body, whole, key string) string {
	if name, ok := strings.CutPrefix(body, "env:"); ok && validEnvName(name) {
		if v, ok := os.LookupEnv(name); ok {
			return v
		}
		l.warn(key, "environment variable %s is not set, so %s expands to \"\"; set it, or write ${%s:-default}", name, whole, name)
		return ""
	}
	if id, ok := strings.CutPrefix(body, "input:"); ok {
		return l.input(strings.TrimSpace(id), whole, key)
	}
	if body == "/" {
		return string(os.PathSeparator)
	}
	name, def, hasDef := strings.Cut(body, ":-")
	if !validEnvName(name) {
		l.warn(key, "%s is not a variable toolshed can expand (it knows ${VAR}, ${VAR:-default}, ${env:VAR}, ${input:id}, ${workspaceFolder} and ${userHome}), so it is left as written", whole)
		return whole
	}
	if v, set := os.LookupEnv(name); set && (v != "" || !hasDef) {
		return v
	}
	if v, ok := l.predefined(name); ok {
		return v
	}
	if hasDef {
		return l.expand(def, key)
	}
	l.warn(key, "environment variable %s is not set, so %s expands to \"\"; set it, or write ${%s:-default}", name, whole, name)
	return ""
}

// predefined returns the value of one of VS Code's predefined variables.
func (l *loader) predefined(name string) (string, bool) {
	switch name {
	case "workspaceFolder":
		return l.workspace(), true
	case "workspaceFolderBasename":
		return filepath.Base(l.workspace()), true
	case "userHome":
		home, err := os.UserHomeDir()
		return home, err == nil
	case "cwd":
		wd, err := os.Getwd()
		return wd, err == nil
	case "pathSeparator":
		return string(os.PathSeparator), true
	}
	return "", false
}

// workspace is the folder ${workspaceFolder} names and relative envFile paths start
// from: the folder holding the config file (or holding its .vscode or .cursor folder), or
// the working directory when the config did not come from a file.
func (l *loader) workspace() string {
	if l.dir != "" {
		return l.dir
	}
	if wd, err := os.Getwd(); err == nil {
		return wd
	}
	return "."
}

// input expands ${input:id}. The gateway runs unattended and cannot prompt, so a VS Code
// input yields its declared default, or "".
func (l *loader) input(id, whole, key string) string {
	in, ok := l.inputs[id]
	switch {
	case ok && in.hasDefault:
		l.warn(key, "%s asks for a VS Code input, which toolshed cannot prompt for; using the input's default. Use ${VAR} to take the value from the environment instead", whole)
		return in.def
	case ok:
		l.warn(key, "%s asks for a VS Code input, which toolshed cannot prompt for, so it expands to \"\"; use ${VAR} to take the value from the environment instead", whole)
	default:
		l.warn(key, "%s asks for a VS Code input that inputs does not declare, and toolshed cannot prompt for it, so it expands to \"\"; use ${VAR} to take the value from the environment instead", whole)
	}
	return ""
}

// validEnvName reports whether s is a POSIX environment variable name.
func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// parseDotenv reads an env file as VS Code's envFile and docker's --env-file do: KEY=VALUE
// lines, blank lines and # comments, an optional "export " prefix, values optionally in
// single quotes (literal) or double quotes (with \n, \" and \\ escapes). Values are not
// expanded. It returns the variables and the numbers of the lines it could not read.
func parseDotenv(data []byte) (map[string]string, []int) {
	vars := map[string]string{}
	var bad []int
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if n == 1 {
			line = strings.TrimPrefix(line, "\ufeff")
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || !validEnvName(k) {
			bad = append(bad, n)
			continue
		}
		v = strings.TrimSpace(v)
		switch {
		case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
			if u, err := strconv.Unquote(v); err == nil {
				v = u
			} else {
				v = v[1 : len(v)-1]
			}
		case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
			v = v[1 : len(v)-1]
		default:
			if i := strings.Index(v, " #"); i >= 0 {
				v = strings.TrimSpace(v[:i])
			}
		}
		vars[k] = v
	}
	return vars, bad
}
