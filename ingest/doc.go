// Package ingest turns files dropped into a staging directory into table
// commits. It is what the mount's write directories (TABLE/ingest/ and
// TABLE/replace/) run on, and it knows nothing about FUSE: the mount only
// stores what users write in a directory on local disk and reports the
// handles opened for writing on it (Writer).
//
// A stager watches its directory. An entry is settled when no handle on
// any of its files is open and it has not changed for the settle time
// since its last change or its last close. A handle closes with its last
// descriptor: a descriptor shared by several processes (a shell's
// redirection of a subshell, tee) is closed once by each, and only the
// last close ends the writing. Entries are grouped by base name (NAME.mp4
// + NAME.jsonl, or an image folder NAME/ + NAME.json), and a group whose
// parts are all settled is checked, staged and committed. Groups that are
// complete at the same moment go into one commit.
//
// What cannot be committed gets a problem, shown by the mount as the file
// NAME.error beside the group's files, and commits nothing; other groups
// are not held back by it. Problems are kept in memory, not written into
// the staging directory, and belong to one state of the group's files:
// changing or removing the files removes the error. A file whose writing
// failed for lack of room (the disk, or Options.LimitBytes) is incomplete
// and says so instead of being committed.
//
// Crash safety: before an "add" commit the stager hard-links the group's
// files into its work directory and writes a journal. After a crash the
// journal tells whether that commit landed (its episodes are in the table,
// newer than the journal): then the staged files are removed, else they
// stay staged and commit later. No episode is ever added twice, because
// adding an existing episode is an error in the table itself. The journal
// is a file of fixed size reserved when the stager starts, and the work
// directory is kept, so that a disk filled by user data cannot stop
// commits.
package ingest
