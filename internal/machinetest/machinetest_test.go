package machinetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/cohort-dev/cohort/coordinator/machine"
)

func TestTimersDueInOrder(t *testing.T) {
	t0 := time.Unix(100, 0)
	ts := Timers{}
	ts.Apply([]machine.Timer{{Key: "b", At: t0}, {Key: "a", At: t0}, {Key: "c", At: t0.Add(time.Second)}, {Key: "d", At: t0.Add(time.Hour)}})
	ts.Apply([]machine.Timer{{Key: "d"}})
	var got []string
	for {
		k, _, ok := ts.Due(t0.Add(time.Minute))
		if !ok {
			break
		}
		got = append(got, k)
	}
	if len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "c" || len(ts) != 0 {
		t.Fatalf("fired %v, left %v", got, ts)
	}
}

func TestCatch(t *testing.T) {
	trace := []string{"one", "two", "three"}
	msg, last := Catch(func() { Panicking{}.Fatalf("broke at %d", 3) }, &trace, 2)
	if msg != "broke at 3" || last != "  two\n  three\n" {
		t.Fatalf("Catch: %q %q", msg, last)
	}
	if msg, _ := Catch(func() {}, &trace, 2); msg != "" {
		t.Fatalf("no failure: %q", msg)
	}
}

func TestAdvance(t *testing.T) {
	now := time.Unix(100, 0)
	ts := Timers{"x": now.Add(2 * time.Second), "y": now.Add(time.Second), "z": now.Add(time.Hour)}
	var fired []string
	ts.Advance(&now, 5*time.Second, func(key string) {
		fired = append(fired, key+"@"+now.Format("05"))
		if key == "y" {
			ts["w"] = now.Add(time.Second) // a timer set while firing fires too
		}
	})
	if got := fmt.Sprint(fired); got != "[y@41 w@42 x@42]" || now != time.Unix(105, 0) || len(ts) != 1 {
		t.Fatalf("fired %s, now %v, left %v", got, now, ts)
	}
}
