package gateway

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The task table holds at most maxTasks tasks: past it, the one closest to its expiry
// (an expired one first) is forgotten, so a client starting tasks without end cannot
// grow it.
func TestTaskTableBounded(t *testing.T) {
	var table taskTable
	who := principal{profile: "p"}
	first := table.record("s", upTask{id: "task-0"}, who, time.Minute)
	for i := 1; i < maxTasks+100; i++ {
		table.record("s", upTask{id: "task-" + strconv.Itoa(i)}, who, time.Hour)
	}
	if n := table.size(); n != maxTasks {
		t.Fatalf("the table holds %d tasks after %d were recorded, want the cap %d", n, maxTasks+100, maxTasks)
	}
	if _, ok := table.lookup(first, who); ok {
		t.Errorf("the task closest to its expiry is still remembered past the cap")
	}

	small := taskTable{limit: 3}
	expired := small.record("s", upTask{id: "old"}, who, -time.Second)
	a := small.record("s", upTask{id: "a"}, who, 2*time.Hour)
	b := small.record("s", upTask{id: "b"}, who, time.Hour)
	c := small.record("s", upTask{id: "c"}, who, 3*time.Hour) // the expired one goes
	d := small.record("s", upTask{id: "d"}, who, 4*time.Hour) // then b, the soonest to expire
	if small.size() != 3 {
		t.Fatalf("size %d, want 3", small.size())
	}
	for id, want := range map[string]bool{expired: false, a: true, b: false, c: true, d: true} {
		if _, ok := small.lookup(id, who); ok != want {
			t.Errorf("lookup %s = %v, want %v", id, ok, want)
		}
	}
}

// A task's opaque id says nothing of the upstream's id, differs for every principal,
// and is found only for its own.
func TestTaskHandleOwned(t *testing.T) {
	var table taskTable
	alice, bob := principal{profile: "a"}, principal{profile: "b"}
	var cred credential
	cred[0] = 1
	carol := principal{profile: "a", cred: cred}
	ids := map[string]bool{}
	for _, who := range []principal{alice, bob, carol} {
		id := table.record("srv", upTask{id: "task-1"}, who, time.Hour)
		// The prefix is fixed; only what follows it could show the upstream's id
		// (the prefix itself ends in "task-", so a random body starting "1" is no leak).
		body, ok := strings.CutPrefix(id, "toolshed-task-")
		if !ok || strings.Contains(body, "task-1") || strings.Contains(body, "srv") || ids[id] {
			t.Errorf("handle %q for %v: shows the upstream's id, or is another principal's", id, who)
		}
		ids[id] = true
		for _, other := range []principal{alice, bob, carol} {
			if _, ok := table.lookup(id, other); ok != (other == who) {
				t.Errorf("lookup of %v's task by %v = %v", who, other, ok)
			}
		}
	}
	if _, ok := table.lookup("task-1", alice); ok {
		t.Errorf("the upstream's own id is found")
	}
}

func TestDeclareTasks(t *testing.T) {
	for _, tc := range []struct {
		caps any
		want string
	}{
		{nil, `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`},
		{json.RawMessage(`{"sampling":{}}`), `{"sampling":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`},
		{json.RawMessage(`{"extensions":{"x":{"a":1}}}`), `{"extensions":{"x":{"a":1},"io.modelcontextprotocol/tasks":{}}}`},
		{map[string]any{"roots": map[string]any{}}, `{"roots":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`},
	} {
		got, _ := json.Marshal(declareTasks(tc.caps))
		if string(got) != tc.want {
			t.Errorf("declareTasks(%v) = %s, want %s", tc.caps, got, tc.want)
		}
	}
}

func TestRequiresTask(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"name":"t","execution":{"taskSupport":"required"}}`: true,
		`{"name":"t","execution":{"taskSupport":"optional"}}`: false,
		`{"name":"t","execution":"required"}`:                 false,
		`{"name":"t"}`:                                        false,
	} {
		if got := requiresTask(json.RawMessage(raw)); got != want {
			t.Errorf("requiresTask(%s) = %v, want %v", raw, got, want)
		}
	}
}

// A task handle or tasks/get result from an upstream, whatever its bytes, comes out as
// valid JSON with toolshed's taskId and nothing else changed that was a member before;
// reading its state never panics.
func FuzzWithTaskID(f *testing.F) {
	f.Add(`{"resultType":"task","taskId":"task-1","status":"working","pollIntervalMs":50}`, "toolshed-task-x")
	f.Add(`{"taskId":1,"taskId":"dup","result":{"taskId":"inner"}}`, "a\"b\u2028")
	f.Add(`{ "taskId" : null , "ttlMs" : 1e400 }`, "")
	// The ids are toolshed's (base64) or a client's, read from JSON: valid UTF-8.
	f.Fuzz(func(t *testing.T, raw, id string) {
		var st taskState
		_ = json.Unmarshal([]byte(raw), &st)
		_, _, _ = st.pollInterval(), st.ttl(), st.terminal()
		var before map[string]json.RawMessage
		if !utf8.ValidString(id) || json.Unmarshal([]byte(raw), &before) != nil {
			return // the upstream's answer is a JSON object, as the connection checked
		}
		out := withTaskID(json.RawMessage(raw), id)
		var after map[string]json.RawMessage
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("withTaskID(%s) = %s: %v", raw, out, err)
		}
		var got string
		if json.Unmarshal(after["taskId"], &got) != nil || got != id {
			t.Errorf("withTaskID(%s, %q) has taskId %s", raw, id, after["taskId"])
		}
		for k := range before {
			if _, ok := after[k]; !ok {
				t.Errorf("withTaskID(%s) lost member %q", raw, k)
			}
		}
	})
}
