package config

import (
	"reflect"
	"testing"
	"time"
)

func TestSearchLog(t *testing.T) {
	t.Setenv("TS_PG", "postgres://db.internal/toolshed")
	tests := []struct {
		name, src string
		want      SearchLog
		key       string
		warn      []string
	}{
		{"valid", `{db: "${TS_PG}", queries: hash, max_age: 30d, max_rows: 5000}`,
			SearchLog{DB: "postgres://db.internal/toolshed", Queries: "hash", MaxAge: 30 * 24 * time.Hour, MaxRows: 5000}, "", nil},
		{"off", `{db: off, queries: off}`, SearchLog{DB: "off", Queries: "off"}, "", nil},
		{"go duration", `{max_age: 720h}`, SearchLog{MaxAge: 720 * time.Hour}, "", nil},
		{"wrong queries fails closed", `{queries: hashed}`, SearchLog{Queries: "off"}, "search_log.queries", []string{`"hashed" is not plain, hash or off`, "not logged"}},
		{"bad age", `{max_age: forever}`, SearchLog{}, "search_log.max_age", []string{"not a duration", "default (90 days)"}},
		{"negative rows", `{max_rows: -1}`, SearchLog{}, "search_log.max_rows", []string{"not a whole number of 0 or more"}},
		{"db not a string", `{db: [a]}`, SearchLog{}, "search_log.db", []string{"the default file is used"}},
		{"learn off", `{learn: off}`, SearchLog{NoLearn: true}, "", nil},
		{"learn false", `{learn: false}`, SearchLog{NoLearn: true}, "", nil},
		{"learn on", `{learn: on}`, SearchLog{}, "", nil},
		{"learn wrong", `{learn: maybe}`, SearchLog{}, "search_log.learn", []string{`"maybe" is not on or off`}},
		{"learn_every", `{learn_every: 5s}`, SearchLog{LearnEvery: 5 * time.Second}, "", nil},
		{"learn_every seconds", `{learn_every: 90}`, SearchLog{LearnEvery: 90 * time.Second}, "", nil},
		{"learn_every too short", `{learn_every: 10ms}`, SearchLog{}, "search_log.learn_every", []string{"under a second", "the default (1m) applies"}},
		{"learn_every wrong", `{learn_every: soon}`, SearchLog{}, "search_log.learn_every", []string{"not a duration"}},
		{"unknown key", `{path: x}`, SearchLog{}, "search_log.path", []string{"search_log takes db, queries"}},
		{"not a mapping", `[a]`, SearchLog{}, "search_log", []string{"not a mapping"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, warns := mustParse(t, "search_log: "+tt.src+"\n")
			if !reflect.DeepEqual(cfg.SearchLog, tt.want) {
				t.Errorf("search_log = %#v\nwant         %#v", cfg.SearchLog, tt.want)
			}
			if tt.key == "" {
				wantNoWarnings(t, warns)
			} else {
				wantWarning(t, warns, tt.key, tt.warn...)
			}
		})
	}
}
