package cache

import "testing"

func TestResumePositionChoosesRVs(t *testing.T) {
	var p resumePosition
	if got := p.listRV(); got != "0" {
		t.Errorf("first list RV = %q, want \"0\"", got)
	}
	if got := p.watchListRV(); got != "" {
		t.Errorf("first WatchList RV = %q, want \"\"", got)
	}
	p.synced("10")
	if p.listRV() != "10" || p.watchListRV() != "10" || p.watchRV() != "10" {
		t.Errorf("after sync at 10: list %q, watchList %q, watch %q", p.listRV(), p.watchListRV(), p.watchRV())
	}
	p.markUnavailable()
	if p.listRV() != "" || p.watchListRV() != "" {
		t.Errorf("unavailable: list %q, watchList %q, want both \"\"", p.listRV(), p.watchListRV())
	}
	if p.watchRV() != "10" {
		t.Errorf("a plain watch still resumes from the last RV, got %q", p.watchRV())
	}
	p.synced("20")
	if p.listRV() != "20" {
		t.Errorf("a sync clears unavailability: list RV %q", p.listRV())
	}
}

func TestResumePositionPublishesInBatches(t *testing.T) {
	var p resumePosition
	p.synced("5")
	p.advance("6")
	p.advance("7")
	if got := p.snapshot(); got != "5" {
		t.Fatalf("snapshot before publish = %q, want the last published 5", got)
	}
	p.publish()
	if got := p.snapshot(); got != "7" {
		t.Fatalf("snapshot after publish = %q, want 7", got)
	}
}
