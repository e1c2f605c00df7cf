package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Task status notifications (the Tasks extension of MCP 2026-07-28): a server may push
// a task's state as notifications/tasks, whose params are the task as tasks/get would
// answer it (taskId, status, ..., result, error or inputRequests), but only on a
// subscriptions/listen whose notifications.taskIds named the task, and only to a client
// that declared the extension on it.
//
// toolshed listens so for the tasks it polls itself for clients that know nothing of
// tasks, on the connection it wraps (stdio, SSE): a notification about such a task
// wakes its poll, which then asks tasks/get at once rather than at the task's
// pollIntervalMs. The notification's content is never passed on, nor trusted: the
// poll's tasks/get is what counts, so a forged or mistaken notification costs one
// tasks/get of a task toolshed already follows, and one about any other task is
// dropped.

// taskNotification is the method of the extension's task status notification.
const taskNotification = "notifications/tasks"

// taskWakes holds the polls waiting for their task's next state, by task. Its zero
// value is empty and ready.
type taskWakes struct {
	mu     sync.Mutex
	byTask map[wakeKey]chan struct{}
}

// wakeKey names a task on the connection that started it: a notification counts only
// on that connection, never on a later one of the same server, which may number its
// tasks afresh.
type wakeKey struct {
	l  *link
	id string
}

// watch registers a poll of task t and returns the channel its notifications signal
// (one pending signal at most: a poll asks once however many came) and what
// unregisters it.
func (w *taskWakes) watch(t upTask) (<-chan struct{}, func()) {
	k, ch := wakeKey{t.l, t.id}, make(chan struct{}, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byTask == nil {
		w.byTask = map[wakeKey]chan struct{}{}
	}
	if _, taken := w.byTask[k]; taken {
		// Two polls of one task cannot be: a task handle answers one call. Should a
		// server hand out a task id twice, the later poll keeps its timer only.
		return nil, func() {}
	}
	w.byTask[k] = ch
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.byTask[k] == ch {
			delete(w.byTask, k)
		}
	}
}

// notice takes a notifications/tasks that came on l and wakes the poll of its task,
// if toolshed polls one by that id on l; any other is dropped.
func (w *taskWakes) notice(l *link, params json.RawMessage) {
	var p struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(params, &p) != nil || p.TaskID == "" {
		return
	}
	w.mu.Lock()
	ch := w.byTask[wakeKey{l, p.TaskID}]
	w.mu.Unlock()
	if ch != nil {
		signal(ch)
	}
}

// taskNotice handles a notification of l's server that is about toolshed's own task
// listens, and reports whether it was one: a task status notification, or the
// acknowledgement of one of toolshed's listens (whose subscriptionId is the id of a
// request of toolshed's own, which the SDK's client does not know).
func (u *Upstream) taskNotice(l *link, method string, params json.RawMessage) bool {
	switch method {
	case taskNotification:
		u.g.taskWakes.notice(l, params)
		return true
	case "notifications/subscriptions/acknowledged":
		id := bytes.TrimSpace(memberValue(memberValue(params, "_meta"), mcp.MetaKeySubscriptionID))
		return len(id) > 0 && strings.HasPrefix(string(id), `"`+callIDPrefix)
	}
	return false
}

// listenParams are the params of the subscriptions/listen toolshed sends about a task.
type listenParams struct {
	Meta          mcp.Meta `json:"_meta,omitempty"`
	Notifications struct {
		TaskIDs []string `json:"taskIds"`
	} `json:"notifications"`
}

// listen asks the upstream for the status notifications of task t, for a poll on
// behalf of call c, until ctx ends (which cancels the listen with
// notifications/cancelled), and returns the channel they signal, nil when there is
// none: only on the connection toolshed wraps (stdio, SSE; a Streamable HTTP server's
// listen would need a stream of toolshed's own), and only once per task. A server that
// does not send task notifications acknowledges the listen without the task, or
// refuses it, and the poll goes by its timer alone.
func (t upTask) listen(ctx context.Context, c *call) <-chan struct{} {
	l := t.l
	if l == nil || l.conn == nil || !l.advertisesTasks() {
		return nil
	}
	wake, unwatch := t.u.g.taskWakes.watch(t)
	context.AfterFunc(ctx, unwatch)
	if wake == nil {
		return nil
	}
	var p listenParams
	p.Meta = l.callMeta(withoutProgress(c.clientMeta), l.support)
	p.Notifications.TaskIDs = []string{t.id}
	params, err := marshal(p)
	if err != nil {
		return wake
	}
	l.conn.start(ctx, "subscriptions/listen", params, func(json.RawMessage, error) {})
	return wake
}
