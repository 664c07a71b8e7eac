package main

import (
	"encoding/binary"
	"os"
)

// A fileRef is a file the daemon checks for a caller (permits): its
// stat, and where Linux reads its access ACL from — the open file f
// when the daemon has one (the very file it will read), else path, the
// resolved name st came from.
type fileRef struct {
	st   os.FileInfo
	path string
	f    *os.File
}

// The access ACL, as the xattr system.posix_acl_access holds it: a
// little-endian u32 version, then entries of a u16 tag, a u16 perm (r 4,
// w 2, x 1) and a u32 id (a uid or gid, for USER and GROUP entries).
const (
	aclXattr   = "system.posix_acl_access"
	aclVersion = 2

	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclGroup    = 0x08
	aclMask     = 0x10
	aclOther    = 0x20
)

type aclEntry struct {
	tag, perm uint16
	id        uint32
}

// aclPermits reports whether a process of uid, a member of the groups
// inGroup accepts, may use a file of group gid for need (r 4, w 2, x 1)
// by the file's access ACL, the xattr b, as the kernel decides for a
// process that does not own the file (fs/posix_acl.c,
// posix_acl_permission): by the USER entry for uid, under the MASK;
// else, if it is in the file's group (GROUP_OBJ) or a GROUP entry's,
// granted when one of those entries, under the MASK, grants, refused
// when none does; else by OTHER. A malformed ACL (parseACL) refuses.
func aclPermits(b []byte, uid, gid uint32, inGroup func(uint32) bool, need uint16) bool {
	acl, ok := parseACL(b)
	if !ok {
		return false
	}
	mask := uint16(7) // no MASK: only USER_OBJ, GROUP_OBJ and OTHER
	for _, e := range acl {
		if e.tag == aclMask {
			mask = e.perm
		}
	}
	matched := false
	for _, e := range acl {
		switch {
		case e.tag == aclUser && e.id == uid:
			return e.perm&mask&need == need
		case e.tag == aclGroupObj && inGroup(gid), e.tag == aclGroup && inGroup(e.id):
			if e.perm&mask&need == need {
				return true
			}
			matched = true
		case e.tag == aclOther:
			return !matched && e.perm&need == need
		}
	}
	return false
}

// parseACL decodes an access ACL and checks it as the kernel checks one
// before storing it (fs/posix_acl.c, posix_acl_valid): version 2, whole
// entries of known tags, in the order USER_OBJ, USER, GROUP_OBJ, GROUP,
// MASK, OTHER (the tags' own order); one USER_OBJ, one GROUP_OBJ, one
// OTHER, at most one MASK, and a MASK if there is a USER or GROUP
// entry; perms within rwx. It reports false for anything else.
func parseACL(b []byte) ([]aclEntry, bool) {
	if len(b) < 4 || (len(b)-4)%8 != 0 || binary.LittleEndian.Uint32(b) != aclVersion {
		return nil, false
	}
	var acl []aclEntry
	count := map[uint16]int{}
	for b = b[4:]; len(b) > 0; b = b[8:] {
		e := aclEntry{binary.LittleEndian.Uint16(b), binary.LittleEndian.Uint16(b[2:]), binary.LittleEndian.Uint32(b[4:])}
		switch {
		case e.perm&^7 != 0, len(acl) > 0 && e.tag < acl[len(acl)-1].tag:
			return nil, false
		case e.tag != aclUserObj && e.tag != aclUser && e.tag != aclGroupObj &&
			e.tag != aclGroup && e.tag != aclMask && e.tag != aclOther:
			return nil, false
		}
		acl = append(acl, e)
		count[e.tag]++
	}
	named := count[aclUser]+count[aclGroup] > 0
	if count[aclUserObj] != 1 || count[aclGroupObj] != 1 || count[aclOther] != 1 ||
		count[aclMask] > 1 || count[aclMask] == 0 && named {
		return nil, false
	}
	return acl, true
}
