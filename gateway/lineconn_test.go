package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// decodeMessage must read every message as the SDK's jsonrpc.DecodeMessage does.
func checkDecodeLikeSDK(t *testing.T, msg []byte) {
	t.Helper()
	want, wantErr := jsonrpc.DecodeMessage(msg)
	got, gotErr := decodeMessage(msg)
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("decodeMessage(%s): error %v, the SDK's %v", msg, gotErr, wantErr)
	}
	if wantErr != nil {
		return
	}
	wb, err1 := jsonrpc.EncodeMessage(want)
	gb, err2 := jsonrpc.EncodeMessage(got)
	if err1 != nil || err2 != nil || !bytes.Equal(wb, gb) {
		t.Errorf("decodeMessage(%s) = %s (%v), the SDK's %s (%v)", msg, gb, err2, wb, err1)
	}
	if r, ok := want.(*jsonrpc.Request); ok && !bytes.Equal(r.Params, got.(*jsonrpc.Request).Params) {
		t.Errorf("decodeMessage(%s): params %s, the SDK's %s", msg, got.(*jsonrpc.Request).Params, r.Params)
	}
	if r, ok := want.(*jsonrpc.Response); ok && !bytes.Equal(r.Result, got.(*jsonrpc.Response).Result) {
		t.Errorf("decodeMessage(%s): result %s, the SDK's %s", msg, got.(*jsonrpc.Response).Result, r.Result)
	}
}

var decodeCases = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"n":12345678901234567890}}}`,
	`{"jsonrpc":"2.0","id":"abc","method":"ping"}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":null}`,
	`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"\u00e9 <&>"}],"x":1.0}}`,
	`{"jsonrpc":"2.0","id":7,"result":null}`,
	`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad","data":{"k":1}}}`,
	`{"jsonrpc":"2.0","id":7,"result":{},"error":null}`,
	`{ "id" : 2.0 , "jsonrpc" : "2.0" , "result" : { } }`,
	`{"jsonrpc":"1.0","id":1,"method":"x"}`,
	`{"id":1,"method":"x"}`,
	`{"jsonrpc":"2.0","id":true,"method":"x"}`,
	`{"jsonrpc":"2.0","id":null,"result":{}}`,
	`{"jsonrpc":"2.0","result":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":5}`,
	`{"jsonrpc":"2.0","id":1,"method":""}`,
	`{"jsonrpc":"2.0","id":-3,"method":"m","method":"n"}`,
	`{"jsonrpc":"2.0","id":"\u0041","method":"a\"b"}`,
	`{"jsonrpc":"2.0","id":1e3,"result":[]}`,
}

func TestDecodeMessageLikeSDK(t *testing.T) {
	for _, m := range decodeCases {
		checkDecodeLikeSDK(t, []byte(m))
	}
}

func FuzzDecodeMessage(f *testing.F) {
	for _, m := range decodeCases {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		b := []byte(msg)
		if !json.Valid(b) || bytes.TrimSpace(b)[0] != '{' {
			return // decodeMessages checks these first
		}
		checkDecodeLikeSDK(t, b)
	})
}

// A lineConn reads messages and batches line by line, whatever the line ending, and
// writes one message per line.
func TestLineConn(t *testing.T) {
	in := "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"}\r\n\n" +
		"[{\"jsonrpc\":\"2.0\",\"method\":\"b\"},{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}]\n" +
		"{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"error\":{\"code\":1,\"message\":\"m\"}}"
	var out bytes.Buffer
	c := newLineConn(bytes.NewReader([]byte(in)), &out, func() error { return nil })
	defer c.Close()
	ctx := context.Background()
	var got []string
	for {
		m, err := c.Read(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := jsonrpc.EncodeMessage(m)
		got = append(got, string(b))
	}
	want := []string{
		`{"jsonrpc":"2.0","id":1,"method":"a"}`,
		`{"jsonrpc":"2.0","method":"b"}`,
		`{"jsonrpc":"2.0","id":2,"result":{}}`,
		`{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"m"}}`,
	}
	if len(got) != len(want) {
		t.Fatalf("read %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("message %d = %s, want %s", i, got[i], want[i])
		}
	}
	id, _ := jsonrpc.MakeID(float64(3))
	if err := c.Write(ctx, &jsonrpc.Response{ID: id, Result: json.RawMessage(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"a\":1}}\n" {
		t.Errorf("wrote %q", out.String())
	}

	bad := newLineConn(bytes.NewReader([]byte("this is not JSON-RPC {{{\n")), io.Discard, func() error { return nil })
	defer bad.Close()
	if _, err := bad.Read(ctx); err == nil || err == io.EOF {
		t.Errorf("reading garbage: %v, want an error", err)
	}
}

// TestLineConnAnswersBadLines checks the connection to toolshed's own client: a line
// too long to read, and lines that are not JSON-RPC messages, are answered with errors
// and skipped, and the message after them is read; on an upstream's connection the
// same line ends it.
func TestLineConnAnswersBadLines(t *testing.T) {
	long := bytes.Repeat([]byte("x"), maxLineLength+10)
	in := append(append(long, '\n'), []byte("nope\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n")...)
	var out bytes.Buffer
	c := newLineConn(bytes.NewReader(in), &out, func() error { return nil })
	c.answerBad = true
	defer c.Close()
	msg, err := c.Read(context.Background())
	if err != nil {
		t.Fatalf("Read after bad lines: %v", err)
	}
	if r, ok := msg.(*jsonrpc.Request); !ok || r.Method != "ping" {
		t.Fatalf("Read = %#v, want the ping", msg)
	}
	want := []string{
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: a message is longer than 16777216 bytes; send smaller messages"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not JSON; send one JSON-RPC 2.0 message per line"}}`,
	}
	if got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"); !slices.Equal(got, want) {
		t.Errorf("answers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	up := newLineConn(strings.NewReader("nope\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n"), io.Discard, func() error { return nil })
	defer up.Close()
	if _, err := up.Read(context.Background()); err == nil {
		t.Error("an upstream's garbage line did not end its connection")
	}
}
