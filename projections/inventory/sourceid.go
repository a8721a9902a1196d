package inventory

import (
	"strings"
	"sync"
	"sync/atomic"
)

// sourceID stands for a source's name in the evidence of a device's
// fields: 4 bytes in each of the eight fields of every device instead of
// a string's 16 (at 10,000 devices, 1.3 MB less). A service has tens of
// sources, so the names are held once for the process, in sourceNames.
// 0 is no source.
type sourceID uint32

// sourceNames is the process's table of source names. It is only added
// to: a source renamed keeps its old name's entry (a few bytes), as the
// log keeps its events.
var sourceNames struct {
	ids   sync.Map // name → sourceID, read without a lock
	mu    sync.Mutex
	names atomic.Pointer[[]string] // names[id]; replaced whole when one is added
}

// sourceIDOf returns name's ID, adding it when new.
func sourceIDOf(name string) sourceID {
	if name == "" {
		return 0
	}
	if id, ok := sourceNames.ids.Load(name); ok {
		return id.(sourceID)
	}
	sourceNames.mu.Lock()
	defer sourceNames.mu.Unlock()
	if id, ok := sourceNames.ids.Load(name); ok {
		return id.(sourceID)
	}
	names := []string{""}
	if p := sourceNames.names.Load(); p != nil {
		names = *p
	}
	// A new slice each time: readers hold the one they loaded.
	next := append(make([]string, 0, len(names)+1), names...)
	next = append(next, strings.Clone(name))
	id := sourceID(len(names))
	sourceNames.names.Store(&next)
	sourceNames.ids.Store(next[id], id)
	return id
}

// name is the source's name, "" for 0.
func (id sourceID) name() string {
	if id == 0 {
		return ""
	}
	return (*sourceNames.names.Load())[id]
}
