package topics

import (
	"errors"
	"os"
	"syscall"
)

// dataSync makes f's data durable with fdatasync(2): the data, and the
// file's length when it changed, without the timestamps that fsync(2)
// would commit to the journal as well. The active segment is written
// ahead with zeros (zeroAheadMin), so its length rarely changes, and an
// append's sync is then the data alone.
func dataSync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = syscall.Fdatasync(int(fd))
			if !errors.Is(serr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	return nil
}
