package keywatch

import "testing"

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Notify wakes the watchers of its key only; NotifyAll wakes those of
// every key, and each watcher's next Changed waits for the next change.
func TestSet_NotifyAllWakesEveryKey(t *testing.T) {
	var s Set
	a, stopA := s.Changed("a")
	defer stopA()
	b, stopB := s.Changed("b")
	defer stopB()
	table, stopTable := s.Changed("")
	defer stopTable()

	s.Notify("a")
	if !closed(a) || closed(b) || closed(table) {
		t.Fatalf("after Notify(a): a %v, b %v, table %v; want only a woken", closed(a), closed(b), closed(table))
	}
	a, stopA2 := s.Changed("a")
	defer stopA2()
	s.NotifyAll()
	if !closed(a) || !closed(b) || !closed(table) {
		t.Fatalf("after NotifyAll: a %v, b %v, table %v; want every key woken", closed(a), closed(b), closed(table))
	}
	next, stopNext := s.Changed("b")
	defer stopNext()
	if closed(next) {
		t.Fatal("b's next Changed is closed before any change")
	}
}

// NotifyAll on a Set nobody watches does nothing, and once the last
// watcher of a key stops, the key is no longer watched.
func TestSet_NotifyAllWithoutWatchers(t *testing.T) {
	var s Set
	s.NotifyAll()
	_, stop := s.Changed("a")
	if !s.Watched() {
		t.Fatal("a key with a watcher is not watched")
	}
	stop()
	stop() // a second stop does nothing
	if s.Watched() {
		t.Fatal("a key whose only watcher stopped is still watched")
	}
	s.NotifyAll()
}
