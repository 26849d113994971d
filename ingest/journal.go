package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The journal records an add commit in flight, for recovery after a
// crash. It lives in a file of fixed size reserved when the stager
// starts and is overwritten in place, so that writing it never needs new
// room on the staging disk: user data filling the disk cannot stop
// commits.
//
// Layout: a 12-byte header (magic "FJ01", payload length and CRC-32 of
// the payload, both big-endian uint32), then the JSON payload. Length 0
// means no commit is in flight. A header torn by a crash fails its
// checksum; the journal is then discarded, which is right, since the
// commit it was written for had not started.

// journal is what an add commit records before it starts.
type journal struct {
	Started time.Time      `json:"started"`
	Groups  []journalGroup `json:"groups"`
}

type journalGroup struct {
	Episode string `json:"episode"`
	// Files maps each staged name to the digest of its fingerprint (an
	// image folder's fingerprint covers all its files, and may be long).
	Files map[string]string `json:"files"`
}

// digestPrefix marks a fingerprint digest.
const digestPrefix = "sha256:"

// fpDigest is the fixed-size stand-in for a fingerprint in the journal.
func fpDigest(fp string) string {
	sum := sha256.Sum256([]byte(fp))
	return digestPrefix + hex.EncodeToString(sum[:16])
}

// sameFiles tells whether a fingerprint, or the digest of one, recorded
// earlier matches a fresh fingerprint.
func sameFiles(recorded, fresh string) bool {
	if strings.HasPrefix(recorded, digestPrefix) {
		return recorded == fpDigest(fresh)
	}
	return recorded == fresh
}

const (
	journalFile    = "journal"
	journalMagic   = "FJ01"
	journalHeader  = 12
	journalReserve = 256 << 10 // maxBatch groups of long names fit thrice
)

// errJournalFull means a batch is too large for the reserved journal.
var errJournalFull = errors.New("ingest: the commit is too large for the journal")

func (s *Stager) journalPath() string { return filepath.Join(s.opts.WorkDir, journalFile) }

// reserveJournal makes sure the journal file holds journalReserve
// allocated bytes.
func (s *Stager) reserveJournal() error {
	f, err := os.OpenFile(s.journalPath(), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("ingest: reserve the journal: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() >= journalReserve {
		return nil
	}
	err = unix.Fallocate(int(f.Fd()), 0, 0, journalReserve)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		// No fallocate here: writing zeros allocates the blocks too.
		var st os.FileInfo
		if st, err = f.Stat(); err == nil {
			_, err = f.WriteAt(make([]byte, journalReserve-st.Size()), st.Size())
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		return fmt.Errorf("ingest: reserve %d bytes for the journal in %s: %w", journalReserve, s.opts.WorkDir, err)
	}
	return nil
}

// writeJournal records j durably, in place.
func (s *Stager) writeJournal(j journal) error {
	payload, err := json.Marshal(j)
	if err != nil {
		return err
	}
	if journalHeader+len(payload) > journalReserve {
		return errJournalFull
	}
	if err := s.reserveJournal(); err != nil {
		return err
	}
	return s.putJournal(payload, true)
}

// clearJournal marks that no commit is in flight. It need not be
// durable: recovering a journal whose commit finished removes nothing,
// since its files are gone already.
func (s *Stager) clearJournal() {
	if err := s.putJournal(nil, false); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.log.Warn("clearing the ingest journal", "err", err)
	}
}

func (s *Stager) putJournal(payload []byte, sync bool) error {
	f, err := os.OpenFile(s.journalPath(), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	buf := make([]byte, journalHeader+len(payload))
	copy(buf, journalMagic)
	binary.BigEndian.PutUint32(buf[4:], uint32(len(payload)))
	binary.BigEndian.PutUint32(buf[8:], crc32.ChecksumIEEE(payload))
	copy(buf[journalHeader:], payload)
	if _, err = f.WriteAt(buf, 0); err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("ingest: write the journal %s: %w", s.journalPath(), err)
	}
	return nil
}

// readJournal returns the commit in flight, if any. An unreadable journal
// is reported and treated as none.
func (s *Stager) readJournal() (*journal, error) {
	f, err := os.Open(s.journalPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var head [journalHeader]byte
	if _, err := io.ReadFull(f, head[:]); err != nil {
		return nil, nil // never written
	}
	n := binary.BigEndian.Uint32(head[4:])
	if n == 0 && bytes.Equal(head[:4], make([]byte, 4)) {
		return nil, nil // reserved, never used
	}
	if string(head[:4]) != journalMagic || n > journalReserve-journalHeader {
		s.log.Warn("discarding an unreadable journal", "file", s.journalPath())
		return nil, nil
	}
	if n == 0 {
		return nil, nil
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(f, payload); err != nil || crc32.ChecksumIEEE(payload) != binary.BigEndian.Uint32(head[8:]) {
		s.log.Warn("discarding a torn journal", "file", s.journalPath(), "err", err)
		return nil, nil
	}
	var j journal
	if err := json.Unmarshal(payload, &j); err != nil {
		s.log.Warn("discarding an unreadable journal", "file", s.journalPath(), "err", err)
		return nil, nil
	}
	return &j, nil
}

// legacyJournal is where stagers before the reserved journal kept it.
func (s *Stager) legacyJournal() string { return filepath.Join(s.batchDir(), "journal.json") }

// recoverJournal finishes an add commit that a crash interrupted: if it
// landed, the staged files it committed are removed; if not, they stay
// staged and commit again. s.commitMu must be held; until it succeeds,
// nothing else commits (a new journal would overwrite the old one).
func (s *Stager) recoverJournal(ctx context.Context) error {
	j, err := s.readJournal()
	if err != nil {
		return err
	}
	if j == nil {
		if data, err := os.ReadFile(s.legacyJournal()); err == nil && json.Unmarshal(data, &j) != nil {
			j = nil
		}
	}
	if j != nil {
		if err := s.finishJournal(ctx, j); err != nil {
			return err
		}
	}
	s.clearJournal()
	os.Remove(s.legacyJournal())
	return s.clearBatch()
}

// finishJournal removes the staged files of the journal's groups that are
// in the table, added by the commit the journal was written for.
func (s *Stager) finishJournal(ctx context.Context, j *journal) error {
	tbl, err := s.opts.Table(ctx)
	if err != nil {
		return err
	}
	head, err := tbl.Head(ctx)
	if err != nil || head == nil {
		return err // nil head: nothing landed
	}
	for _, jg := range j.Groups {
		e, err := tbl.Episode(ctx, head, jg.Episode)
		if err != nil || e.Time.Before(j.Started) {
			continue // did not land: still staged
		}
		g := &group{name: jg.Episode}
		for name, fp := range jg.Files {
			k, _ := classify(name, false)
			if st, err := os.Stat(filepath.Join(s.opts.Dir, name)); err == nil && st.IsDir() {
				k = kindImages
			}
			g.entries = append(g.entries, &entry{name: name, fp: fp, kind: k})
		}
		s.log.Info("a commit interrupted by a crash had landed; removing its staged files", "episode", jg.Episode, "snapshot", head.ID)
		s.done(g, g.entries)
	}
	return nil
}
