package topics

import "syscall"

// DiskSpace returns the total and usable bytes of the file system that
// holds dir (DescribeLogDirs' TotalBytes and UsableBytes), -1 for both if
// it cannot tell.
func DiskSpace(dir string) (total, usable int64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1, -1
	}
	return int64(st.Blocks) * int64(st.Bsize), int64(st.Bavail) * int64(st.Bsize)
}
