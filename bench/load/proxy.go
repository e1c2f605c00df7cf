package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// -mode proxy puts the real `toolshed proxy` in front of a model API that this program
// serves on loopback (the Anthropic wire format), and sends it what issue 28 found the
// proxy could not bound: answers far over its bound (-answer-mib each: a whole JSON body,
// a stream of many small events, and a stream whose one line is the whole answer), with
// ordinary requests beside them, then a client that churns the tool-list cache with
// distinct lists of -list-tools deferred tools. It samples the proxy's RSS throughout.

// The markers a request's message carries to choose the upstream's answer.
const (
	hugeBody = "huge-body" // a JSON message of -answer-mib
	hugeSSE  = "huge-sse"  // a stream of 4 KiB text deltas, -answer-mib in all
	hugeLine = "huge-line" // a stream whose one content_block_delta line is -answer-mib
)

// hugeModel is the model API: ordinary requests get a short message; those with a
// marker, the huge answer it names, sent until the proxy stops reading.
type hugeModel struct {
	size int64
	sent atomic.Int64 // bytes of huge answers written, all requests
}

func (m *hugeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var marker string
	for _, k := range []string{hugeBody, hugeSSE, hugeLine} {
		if strings.Contains(string(body), k) {
			marker = k
		}
	}
	if marker == "" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_ok","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)
		return
	}
	filler := strings.Repeat("a", 4096)
	var head, piece string
	switch marker {
	case hugeBody:
		w.Header().Set("Content-Type", "application/json")
		head, piece = `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"`, filler
	default:
		w.Header().Set("Content-Type", "text/event-stream")
		head = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
		piece = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + filler + "\"}}\n\n"
		if marker == hugeLine {
			head += "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\""
			piece = filler
		}
	}
	sent := int64(0)
	for _, s := range slices.Concat([]string{head}, slices.Repeat([]string{piece}, int(m.size/int64(len(piece))))) {
		n, err := io.WriteString(w, s)
		sent += int64(n)
		if err != nil {
			break // the proxy stopped reading, as it must
		}
	}
	m.sent.Add(sent)
}

var proxyLine = regexp.MustCompile(`with tool search at (http://\S+)/v1/messages`)

// startProxy starts bin as `toolshed proxy` in front of upstream on a free loopback
// port, in a process group of its own, and returns once it listens; endpoint is its base
// URL.
func startProxy(bin, upstream string, extra []string) (*gatewayProc, error) {
	args := append([]string{"proxy", "--listen", "127.0.0.1:0", "--upstream-url", upstream}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = append(os.Environ(), "TOOLSHED_TOKEN=")
	return launch(cmd, proxyLine, "toolshed proxy")
}

// rssSampler samples a process's RSS every 250 ms and keeps the largest.
type rssSampler struct {
	pid  int
	peak atomic.Int64
	stop chan struct{}
	done chan struct{}
}

func sampleRSS(pid int) *rssSampler {
	s := &rssSampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	// Reset the kernel's peak (VmHWM) so that it is this phase's, where allowed.
	os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
	go func() {
		defer close(s.done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			if now, _ := rss(pid); now > s.peak.Load() {
				s.peak.Store(now)
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// end stops sampling and returns the peak: the kernel's (VmHWM) when it was reset for
// this phase, else the largest sample.
func (s *rssSampler) end() int64 {
	close(s.stop)
	<-s.done
	_, hwm := rss(s.pid)
	return max(hwm, s.peak.Load())
}

// proxyTally counts a phase's requests: answered as they must be, or not (by message).
type proxyTally struct {
	mu       sync.Mutex
	answered int
	errs     map[string]int
	lat      []time.Duration
}

func (t *proxyTally) add(d time.Duration, problem string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if problem == "" {
		t.answered++
		t.lat = append(t.lat, d)
		return
	}
	if t.errs == nil {
		t.errs = map[string]int{}
	}
	if len(problem) > 160 {
		problem = problem[:160] + "…"
	}
	t.errs[problem]++
}

func (t *proxyTally) errors() int {
	n := 0
	for _, c := range t.errs {
		n += c
	}
	return n
}

func (t *proxyTally) print(name string) {
	p50 := time.Duration(0)
	if len(t.lat) > 0 {
		slices.Sort(t.lat)
		p50 = t.lat[len(t.lat)/2]
	}
	fmt.Printf("  %s: %d answered as they must be, %d not (p50 %v)\n", name, t.answered, t.errors(), p50.Round(time.Millisecond))
	for msg, n := range t.errs {
		fmt.Printf("    %d × %s\n", n, msg)
	}
}

// postMessages sends a Messages API request and reads the whole answer.
func postMessages(hc *http.Client, base string, body []byte) (status int, answer string, err error) {
	req, err := http.NewRequest(http.MethodPost, base+"/v1/messages", strings.NewReader(string(body)))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// checkHuge says what is wrong with the answer to a request whose answer was over the
// bound, or "": it must be the api_error that says so, as a 500 or, once the stream
// has begun, as the stream's last event.
func checkHuge(stream bool, status int, answer string, err error) string {
	if err != nil {
		return "no answer: " + err.Error()
	}
	errBody := answer
	if stream && status == http.StatusOK {
		i := strings.LastIndex(answer, "event: error\ndata: ")
		if i < 0 {
			return "the stream does not end with an error event"
		}
		errBody = answer[i+len("event: error\ndata: "):]
	} else if status != http.StatusInternalServerError {
		return fmt.Sprintf("HTTP %d, want 500", status)
	}
	var e struct {
		Error struct{ Type, Message string }
	}
	if json.Unmarshal([]byte(strings.TrimSpace(errBody)), &e) != nil || e.Error.Type != "api_error" || !strings.Contains(e.Error.Message, "answer is over") {
		return fmt.Sprintf("not the api_error of an answer over the bound: %.200s", errBody)
	}
	return ""
}

func messagesBody(text string, stream bool, tools string) []byte {
	b := fmt.Sprintf(`{"model":"m","max_tokens":100,"stream":%v,"messages":[{"role":"user","content":%q}]`, stream, text)
	if tools != "" {
		b += `,"tools":` + tools
	}
	return []byte(b + "}")
}

// churnList is a tools list of n deferred tools of about size bytes each, distinct by
// salt, with a BM25 search tool, so that the proxy indexes it.
func churnList(salt string, n, size int) string {
	var b strings.Builder
	b.WriteString(`[{"type":"tool_search_tool_bm25_20251119","name":"tool_search"},{"name":"plain","input_schema":{"type":"object"}}`)
	words := strings.Repeat("query the inventory database for stock levels by warehouse and region ", size/70+1)[:max(size-160, 10)]
	for i := range n {
		fmt.Fprintf(&b, `,{"name":"t%s_%d","description":"%s %s %d","input_schema":{"type":"object","properties":{"q":{"type":"string"}}},"defer_loading":true}`, salt, i, salt, words, i)
	}
	b.WriteString("]")
	return b.String()
}

func runProxyMode(o options) error {
	for _, k := range strings.Split(o.answerKinds, ",") {
		if k != "body" && k != "sse" && k != "line" {
			return fmt.Errorf("-answer-kinds must list body, sse and line, separated by commas, got %q", o.answerKinds)
		}
	}
	model := &hugeModel{size: int64(o.answerMiB) << 20}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	up := &http.Server{Handler: model}
	go up.Serve(ln)
	defer up.Close()
	p, err := startProxy(o.toolshed, "http://"+ln.Addr().String(), o.extra)
	if err != nil {
		return err
	}
	defer p.stop()
	pid := p.cmd.Process.Pid
	hc := &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	if status, answer, err := postMessages(hc, p.endpoint, messagesBody("hello", false, "")); err != nil || status != http.StatusOK {
		return fmt.Errorf("the proxy does not answer an ordinary request: HTTP %d %v %.200s\n%s", status, err, answer, p.stderr.String())
	}
	base, _ := rss(pid)
	fmt.Fprintf(os.Stderr, "load: toolshed proxy (pid %d) at %s, RSS %s; %d huge answers of %d MiB of each kind, %d at a time\n",
		pid, p.endpoint, mb(base), o.huge, o.answerMiB, o.hugeConc)

	// Huge answers, with ordinary requests beside them.
	sampler := sampleRSS(pid)
	start := time.Now()
	huge := map[string]*proxyTally{hugeBody: {}, hugeSSE: {}, hugeLine: {}}
	var normal proxyTally
	stopNormal := make(chan struct{})
	var normalDone sync.WaitGroup
	normalDone.Go(func() {
		for {
			select {
			case <-stopNormal:
				return
			case <-time.After(100 * time.Millisecond):
			}
			t0 := time.Now()
			status, answer, err := postMessages(hc, p.endpoint, messagesBody("hello", false, ""))
			problem := ""
			switch {
			case err != nil:
				problem = "no answer: " + err.Error()
			case status != http.StatusOK || !strings.Contains(answer, `"ok"`):
				problem = fmt.Sprintf("HTTP %d: %.200s", status, answer)
			}
			normal.add(time.Since(t0), problem)
		}
	})
	jobs := make(chan string)
	var workers sync.WaitGroup
	for range o.hugeConc {
		workers.Go(func() {
			for marker := range jobs {
				stream := marker != hugeBody
				t0 := time.Now()
				status, answer, err := postMessages(hc, p.endpoint, messagesBody(marker, stream, ""))
				huge[marker].add(time.Since(t0), checkHuge(stream, status, answer, err))
			}
		})
	}
	kinds := strings.Split(o.answerKinds, ",")
	for range o.huge {
		for _, k := range kinds {
			jobs <- map[string]string{"body": hugeBody, "sse": hugeSSE, "line": hugeLine}[k]
		}
	}
	close(jobs)
	workers.Wait()
	close(stopNormal)
	normalDone.Wait()
	hugePeak := sampler.end()
	fmt.Printf("huge answers: %d of %d MiB each (%d × each of %s: a JSON body, a stream of 4 KiB deltas, a stream of one line), %d at a time, in %.1f s; the upstream wrote %s in all\n",
		len(kinds)*o.huge, o.answerMiB, o.huge, o.answerKinds, o.hugeConc, time.Since(start).Seconds(), mb(model.sent.Load()))
	huge[hugeBody].print("JSON body over the bound")
	huge[hugeSSE].print("stream of small deltas over the bound")
	huge[hugeLine].print("stream of one line over the bound")
	normal.print("ordinary requests beside them")
	after, _ := rss(pid)
	fmt.Printf("  toolshed proxy RSS: %s before, peak %s, %s after\n", mb(base), mb(hugePeak), mb(after))

	// Tool-list cache churn: each list twice (its second request hits the cache while
	// the list is kept).
	fmt.Fprintf(os.Stderr, "load: %d distinct lists of %d deferred tools, each sent twice\n", o.lists, o.listTools)
	sampler = sampleRSS(pid)
	start = time.Now()
	var first, second proxyTally
	listBytes := 0
	for i := range o.lists {
		list := churnList(fmt.Sprintf("l%d", i), o.listTools, o.toolBytes)
		listBytes = len(list)
		body := messagesBody("find the stock tool", false, list)
		for _, t := range []*proxyTally{&first, &second} {
			t0 := time.Now()
			status, answer, err := postMessages(hc, p.endpoint, body)
			problem := ""
			switch {
			case err != nil:
				problem = "no answer: " + err.Error()
			case status != http.StatusOK:
				problem = fmt.Sprintf("HTTP %d: %.200s", status, answer)
			}
			t.add(time.Since(t0), problem)
		}
	}
	churnPeak := sampler.end()
	after2, _ := rss(pid)
	fmt.Printf("tool-list cache churn: %d distinct lists of %d deferred tools (%s each), each sent twice, one at a time, in %.1f s\n",
		o.lists, o.listTools, mb(int64(listBytes)), time.Since(start).Seconds())
	first.print("first request of a list")
	second.print("the same list again")
	fmt.Printf("  toolshed proxy RSS: %s before, peak %s, %s after\n", mb(after), mb(churnPeak), mb(after2))

	if o.markdown {
		fmt.Println()
		fmt.Println("| phase | answered | errors | peak RSS |")
		fmt.Println("|---|---:|---:|---:|")
		n, e := 0, 0
		for _, t := range huge {
			n, e = n+t.answered, e+t.errors()
		}
		fmt.Printf("| %d answers of %d MiB (%s), %d at a time | %d | %d | %s |\n", len(kinds)*o.huge, o.answerMiB, o.answerKinds, o.hugeConc, n, e, mb(hugePeak))
		fmt.Printf("| ordinary requests beside them | %d | %d | |\n", normal.answered, normal.errors())
		fmt.Printf("| cache churn: %d lists × %d tools (%s), each twice | %d | %d | %s |\n", o.lists, o.listTools, mb(int64(listBytes)), first.answered+second.answered, first.errors()+second.errors(), mb(churnPeak))
	}
	failed := normal.errors() + first.errors() + second.errors()
	for _, t := range huge {
		failed += t.errors()
	}
	if failed > 0 {
		return errors.New("some requests were not answered as they must be (see above)")
	}
	return nil
}
