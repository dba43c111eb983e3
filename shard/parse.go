package shard

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/sharding"
)

// Parse reads a shard selector in the form kube-apiserver takes:
// one or more shardRange(<key>, '<start>', '<end>') terms joined by "||",
// white space allowed between tokens, literals in single or double quotes.
// It accepts what Shard.String writes and returns a clear error, wrapping
// ErrInvalid, for anything else: an empty selector, another function
// or operator, an unsupported or mixed key, a malformed bound, an empty or
// inverted range.
func Parse(selector string) (Shard, error) {
	p := parser{in: selector}
	if strings.TrimSpace(selector) == "" {
		return Shard{}, fmt.Errorf("%w: empty selector", ErrInvalid)
	}
	var reqs []sharding.ShardRangeRequirement
	for {
		req, err := p.term()
		if err != nil {
			return Shard{}, fmt.Errorf("%w: %q: %w", ErrInvalid, selector, err)
		}
		reqs = append(reqs, req)
		if p.done() {
			return New(reqs...)
		}
		if !p.eat("||") {
			return Shard{}, fmt.Errorf("%w: %q: at offset %d: want || between shardRange terms", ErrInvalid, selector, p.at)
		}
	}
}

// parser scans a selector left to right.
type parser struct {
	in string
	at int
}

// term reads shardRange(<key>, <literal>, <literal>).
func (p *parser) term() (sharding.ShardRangeRequirement, error) {
	var req sharding.ShardRangeRequirement
	if !p.eat("shardRange") || !p.eat("(") {
		return req, fmt.Errorf("at offset %d: want shardRange(", p.at)
	}
	req.Key = p.path()
	if req.Key == "" {
		return req, fmt.Errorf("at offset %d: want a field path such as %s", p.at, ByUID)
	}
	var err error
	for _, bound := range []*string{&req.Start, &req.End} {
		if !p.eat(",") {
			return req, fmt.Errorf("at offset %d: want , and a quoted hex bound", p.at)
		}
		if *bound, err = p.literal(); err != nil {
			return req, err
		}
	}
	if !p.eat(")") {
		return req, fmt.Errorf("at offset %d: want ) after three arguments", p.at)
	}
	return req, nil
}

// eat skips white space and then tok, if it is next.
func (p *parser) eat(tok string) bool {
	p.skipSpace()
	if strings.HasPrefix(p.in[p.at:], tok) {
		p.at += len(tok)
		return true
	}
	return false
}

func (p *parser) skipSpace() {
	for p.at < len(p.in) && strings.ContainsRune(" \t\r\n", rune(p.in[p.at])) {
		p.at++
	}
}

// done says whether only white space is left.
func (p *parser) done() bool {
	p.skipSpace()
	return p.at == len(p.in)
}

// path reads a dotted identifier such as object.metadata.uid.
func (p *parser) path() string {
	p.skipSpace()
	start := p.at
	for p.at < len(p.in) {
		c := p.in[p.at]
		if c != '.' && c != '_' && !('a' <= c && c <= 'z') && !('A' <= c && c <= 'Z') && !('0' <= c && c <= '9') {
			break
		}
		p.at++
	}
	return p.in[start:p.at]
}

// literal reads a string in single or double quotes.
func (p *parser) literal() (string, error) {
	p.skipSpace()
	if p.at == len(p.in) || (p.in[p.at] != '\'' && p.in[p.at] != '"') {
		return "", fmt.Errorf("at offset %d: want a quoted hex bound such as '0x8000000000000000'", p.at)
	}
	quote := p.in[p.at]
	end := strings.IndexByte(p.in[p.at+1:], quote)
	if end < 0 {
		return "", fmt.Errorf("at offset %d: unterminated string", p.at)
	}
	s := p.in[p.at+1 : p.at+1+end]
	p.at += end + 2
	return s, nil
}
