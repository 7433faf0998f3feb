package framework

import (
	"bytes"
	"testing"
	"time"
)

func TestLogBufferBetween(t *testing.T) {
	var tee bytes.Buffer
	b := &LogBuffer{Tee: &tee}
	before := time.Now()
	_, _ = b.Write([]byte("one\ntw"))
	_, _ = b.Write([]byte("o\n"))
	mid := time.Now()
	for !time.Now().After(mid) {
	}
	_, _ = b.Write([]byte("three\n"))
	after := time.Now()

	if got, want := string(b.Between(before, after)), "one\ntwo\nthree\n"; got != want {
		t.Errorf("whole window: got %q, want %q", got, want)
	}
	if got, want := string(b.Between(mid.Add(time.Nanosecond), after)), "three\n"; got != want {
		t.Errorf("late window: got %q, want %q", got, want)
	}
	if got, want := tee.String(), "one\ntwo\nthree\n"; got != want {
		t.Errorf("tee: got %q, want %q", got, want)
	}
}
