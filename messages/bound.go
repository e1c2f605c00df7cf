package messages

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// DefaultMaxAnswerBytes bounds what the proxy reads of one upstream answer, of either
// kind of upstream: the whole body of an answer that is not a stream, and everything
// read of a stream (so each of its lines too). A model's answer is text and tool calls,
// well under a megabyte at the largest max_tokens; the bound is far above that, and is
// there so that an upstream that sends without end (a broken server, a hostile one, a
// wrong URL that serves a file) costs the proxy at most this much memory per request
// rather than all it can get.
const DefaultMaxAnswerBytes = 64 << 20

// ErrAnswerTooLarge is the cause of the APIError of an upstream answer over its bound
// (see DefaultMaxAnswerBytes): errors.Is finds it.
var ErrAnswerTooLarge = errors.New("the upstream's answer is over the proxy's bound")

// maxAnswer is a MaxAnswerBytes option with its default.
func maxAnswer(n int64) int64 {
	if n > 0 {
		return n
	}
	return DefaultMaxAnswerBytes
}

// answerTooLarge is the error of an answer over limit bytes: the request that got it
// fails alone, as an api_error that says what to do.
func answerTooLarge(limit int64) *APIError {
	return &APIError{Status: http.StatusInternalServerError, Type: APIErrorType, cause: ErrAnswerTooLarge,
		Message: fmt.Sprintf("the upstream model API's answer is over %s, the most toolshed proxy reads of one answer, so it was not read further; "+
			"ask for a shorter answer (a lower max_tokens), or, if answers this large are expected, raise the bound (toolshed proxy --max-answer-mib)", sizeText(limit))}
}

// sizeText is a byte count as a message shows it: in MiB when it is a whole number of
// them, in bytes otherwise.
func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// boundBody returns the body of an upstream answer, which fails with answerTooLarge
// once more than limit bytes were read. An answer whose Content-Length is already over
// the limit fails at once, without a byte read.
func boundBody(resp *http.Response, limit int64) (io.ReadCloser, error) {
	if resp.ContentLength > limit {
		resp.Body.Close()
		return nil, answerTooLarge(limit)
	}
	return &boundedBody{body: resp.Body, left: limit + 1, limit: limit}, nil
}

// boundedBody reads at most limit+1 bytes of body: the byte past the limit is the one
// that tells an answer over the bound from one exactly at it.
type boundedBody struct {
	body  io.ReadCloser
	left  int64
	limit int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, answerTooLarge(b.limit)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	if b.left <= 0 {
		return n, answerTooLarge(b.limit)
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.body.Close() }

// readAnswer reads the whole body of an answer that is not a stream, within limit, and
// closes it. A body whose length is known is read into one buffer of that size, not
// into buffers grown by copying.
func readAnswer(resp *http.Response, limit int64) ([]byte, error) {
	body, err := boundBody(resp, limit)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength) + bytes.MinRead)
	}
	_, err = buf.ReadFrom(body)
	return buf.Bytes(), err
}
