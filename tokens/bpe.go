package tokens

import "math"

// noRank marks a pair of parts that no token covers.
const noRank = math.MaxUint32

// scanLimit is the piece length below which countPiece merges by scanning the parts
// (quadratic, but without allocation); longer pieces merge through a heap, so a
// pathological piece costs n log n.
const scanLimit = 96

// countPiece returns the number of tokens byte-pair encoding makes of piece: it merges the
// adjacent pair of parts whose union is the lowest-ranked token, the leftmost on ties,
// until no pair is a token, exactly as tiktoken does.
func (v *vocab) countPiece(piece string) int {
	if v.rank(piece) != noRank {
		return 1
	}
	if len(piece) >= scanLimit {
		return v.countHeap(piece)
	}
	// bound[i] is where part i starts; rank[i] is the rank of parts i and i+1 merged.
	var boundBuf [scanLimit + 1]int32
	var rankBuf [scanLimit + 1]uint32
	n := len(piece)
	bound, rank := boundBuf[:n+1], rankBuf[:n+1]
	for i := range bound {
		bound[i] = int32(i)
		rank[i] = noRank
	}
	pair := func(i int) uint32 {
		if i+2 < len(bound) {
			return v.rank(piece[bound[i]:bound[i+2]])
		}
		return noRank
	}
	for i := 0; i+2 < len(bound); i++ {
		rank[i] = pair(i)
	}
	for len(bound) > 1 {
		best, at := uint32(noRank), -1
		for i, r := range rank[:len(bound)-1] {
			if r < best {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		bound = append(bound[:at+1], bound[at+2:]...)
		rank = append(rank[:at+1], rank[at+2:]...)
		rank[at] = pair(at)
		if at > 0 {
			rank[at-1] = pair(at - 1)
		}
	}
	return len(bound) - 1
}

type mergeNode struct {
	next, prev int32
	rank       uint32
}

type candidate struct {
	rank uint32
	at   int32
}

// countHeap is countPiece for long pieces: the parts are a linked list and the candidate
// merges a min-heap ordered by rank, then position; stale candidates are skipped.
func (v *vocab) countHeap(piece string) int {
	n := int32(len(piece))
	nodes := make([]mergeNode, n+1)
	for i := range nodes {
		nodes[i] = mergeNode{next: int32(i) + 1, prev: int32(i) - 1, rank: noRank}
	}
	nodes[n].next = -1
	rankOf := func(i int32) uint32 {
		j := nodes[i].next
		if j < 0 || nodes[j].next < 0 {
			return noRank
		}
		return v.rank(piece[i:nodes[j].next])
	}
	var h minHeap
	for i := int32(0); i+2 <= n; i++ {
		if r := rankOf(i); r != noRank {
			nodes[i].rank = r
			h = append(h, candidate{r, i})
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
	parts := int(n)
	for len(h) > 0 {
		top := h.pop()
		i := top.at
		if nodes[i].rank != top.rank {
			continue
		}
		j := nodes[i].next
		k := nodes[j].next
		nodes[j].rank = noRank
		nodes[i].next = k
		if k >= 0 {
			nodes[k].prev = i
		}
		parts--
		for _, b := range [2]int32{i, nodes[i].prev} {
			if b < 0 {
				continue
			}
			nodes[b].rank = rankOf(b)
			if nodes[b].rank != noRank {
				h.push(candidate{nodes[b].rank, b})
			}
		}
	}
	return parts
}

// minHeap is a typed binary heap, so pushes do not allocate an interface each.
type minHeap []candidate

func (h minHeap) less(a, b int) bool {
	if h[a].rank != h[b].rank {
		return h[a].rank < h[b].rank
	}
	return h[a].at < h[b].at
}

func (h *minHeap) push(c candidate) {
	*h = append(*h, c)
	for i := len(*h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		(*h)[i], (*h)[p] = (*h)[p], (*h)[i]
		i = p
	}
}

func (h *minHeap) pop() candidate {
	old := *h
	top := old[0]
	old[0] = old[len(old)-1]
	*h = old[:len(old)-1]
	h.down(0)
	return top
}

func (h minHeap) down(i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if r := c + 1; r < len(h) && h.less(r, c) {
			c = r
		}
		if !h.less(c, i) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}
