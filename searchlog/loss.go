package searchlog

import (
	"fmt"
	"strings"
	"time"
)

// lossReportEvery bounds how often the log says that it lost records while they go on
// being lost: a store that stays full for an hour says so about once a minute, each
// line with the count since the one before, not once per batch.
const lossReportEvery = time.Minute

// losses is what the writer lost and has not said yet. A record is lost when the queue
// is full (the writer fell behind, or the store failed long enough), when a store that
// fails keeps more than QueueSize records waiting (the oldest go), or when the log
// closes with records its store would not take.
type losses struct {
	dropsSeen int64     // Log.dropped, as counted so far
	dropped   int64     // records dropped by a full queue, not said yet
	givenUp   int64     // records a failing store kept waiting too long, not said yet
	total     int64     // records lost since the store began failing, said on recovery
	err       error     // the store's last error
	said      time.Time // when a loss was last said
}

// Lost reports how many records the log has lost in all: dropped because the queue was
// full (Dropped), or given up after its store failed to take them.
func (l *Log) Lost() int64 {
	if l == nil {
		return 0
	}
	return l.dropped.Load() + l.givenUp.Load()
}

// boundPending gives up the oldest records kept for the next write beyond QueueSize.
func (l *Log) boundPending() {
	for over := l.kept() - l.opts.QueueSize; over > 0; {
		b := l.pending[0]
		if len(b) > over {
			l.pending[0] = b[over:]
			l.giveUp(over)
			return
		}
		l.pending = l.pending[1:]
		l.giveUp(len(b))
		over -= len(b)
	}
}

// kept counts the records kept for the next write.
func (l *Log) kept() int {
	n := 0
	for _, b := range l.pending {
		n += len(b)
	}
	return n
}

func (l *Log) giveUp(n int) {
	l.givenUp.Add(int64(n))
	l.loss.givenUp += int64(n)
	l.loss.total += int64(n)
}

// noteDrops counts the records a full queue dropped since it last looked.
func (l *Log) noteDrops() {
	if n := l.dropped.Load(); n > l.loss.dropsSeen {
		l.loss.dropped += n - l.loss.dropsSeen
		l.loss.total += n - l.loss.dropsSeen
		l.loss.dropsSeen = n
	}
}

// reportLoss says what was lost and not said yet: at once the first time, then at most
// every lossReportEvery, and always when the log closes (final), with the records the
// store would not take before it did (atExit), lost with it.
func (l *Log) reportLoss(final bool, atExit int) {
	lo := &l.loss
	if lo.dropped+lo.givenUp == 0 && atExit == 0 {
		return
	}
	if !final && !lo.said.IsZero() && time.Since(lo.said) < lossReportEvery {
		return
	}
	var parts []string
	if lo.givenUp > 0 {
		parts = append(parts, fmt.Sprintf("%d records lost, the oldest of those waiting for %s to work again (%v): no more than %d are kept", lo.givenUp, l.st.where(), lo.err, l.opts.QueueSize))
	}
	if lo.dropped > 0 {
		parts = append(parts, fmt.Sprintf("%d records dropped because the writer fell behind (queue of %d); searches and calls are not slowed, but the log misses them", lo.dropped, l.opts.QueueSize))
	}
	if atExit > 0 {
		l.givenUp.Add(int64(atExit))
		parts = append(parts, fmt.Sprintf("%d records lost at exit: %s would not take them (%v)", atExit, l.st.where(), lo.err))
	}
	l.opts.Logf("search log: %s", strings.Join(parts, "; "))
	lo.dropped, lo.givenUp, lo.said = 0, 0, time.Now()
}
