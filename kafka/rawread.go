package kafka

import (
	"io"
	"net"
	"os"
	"syscall"
)

// rawConn is nc's raw socket if it is one of this process (a plain TCP
// connection), for frameReader.fill; nil otherwise (TLS).
func rawConn(nc net.Conn) syscall.RawConn {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// fill waits, holding no buffer, until the socket has bytes (or the read
// deadline passes), and reads what is there into a pooled buffer. Only
// for a raw socket with nothing buffered.
func (fr *frameReader) fill() error {
	var rerr error
	err := fr.raw.Read(func(fd uintptr) bool {
		buf := readBufs.Get().(*[]byte)
		var n int
		var e error
		for {
			n, e = syscall.Read(int(fd), *buf)
			if e != syscall.EINTR {
				break
			}
		}
		switch {
		case e == syscall.EAGAIN:
			readBufs.Put(buf)
			return false // wait for the poller, then try again
		case e != nil:
			readBufs.Put(buf)
			rerr = os.NewSyscallError("read", e)
		case n == 0:
			readBufs.Put(buf)
			rerr = io.EOF
		default:
			fr.buf, fr.r, fr.w = buf, 0, n
		}
		return true
	})
	if err != nil {
		return err
	}
	return rerr
}
