package regfile

import "io/fs"

// The caches spread their files over folders named by the first two
// characters of each file's name (a hash), so that no folder grows huge.
// These helpers reach those files through a Dir, never through a link.

// Shard opens the folder of the file name; with create it is made when
// missing, and a link or file in its place is replaced (see Sub).
func (d *Dir) Shard(name string, create bool) (*Dir, error) {
	return d.Sub(name[:2], create)
}

// RemoveFromShard removes the file name from its folder, if both exist.
func (d *Dir) RemoveFromShard(name string) error {
	shard, err := d.Shard(name, false)
	if err != nil {
		return nil // no folder, no file
	}
	defer shard.Close()
	return shard.Remove(name)
}

// WalkShards calls fn with every regular file of the folders named by two
// characters that are real folders (links are not followed), and the
// folder holding it. Files whose names do not start with their folder's
// name are left out, but temporary files (names starting with '.') are
// passed, for the caller to clean up.
func (d *Dir) WalkShards(fn func(shard *Dir, file FileInfo)) error {
	folders, err := d.Entries()
	for _, e := range folders {
		if e.Type != fs.ModeDir || len(e.Name) != 2 {
			continue
		}
		shard, serr := d.Sub(e.Name, false)
		if serr != nil {
			continue
		}
		files, _ := shard.Entries()
		for _, f := range files {
			if !f.Type.IsRegular() || f.Name[0] != '.' && (len(f.Name) < 2 || f.Name[:2] != e.Name) {
				continue
			}
			if info, serr := shard.Stat(f.Name); serr == nil {
				fn(shard, info)
			}
		}
		shard.Close()
	}
	return err
}
