package gleaner

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gleaner-hpc/gleaner/hpo"
)

// ExpandSpaceFile reads the spec's space_file, a ConfigSpace JSON file
// (hpo.ReadConfigSpace; a relative path is relative to dir), into space
// and forbidden, and returns the spec without space_file. A spec without
// one is returned as it is. Errors name the field and the file.
//
// LoadSpec calls it with the spec's directory; a caller that decodes a
// spec from data (DecodeSpec) and submits it calls it too, on the client:
// the campaign's workflow validates the spec it is given and never reads
// a file.
func (s CampaignSpec) ExpandSpaceFile(dir string) (CampaignSpec, error) {
	if s.SpaceFile == "" {
		return s, nil
	}
	if len(s.Space) > 0 || len(s.Forbidden) > 0 {
		return s, fmt.Errorf("space_file: %s, but the spec has space or forbidden too; give the space once", s.SpaceFile)
	}
	path := s.SpaceFile
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	info, err := os.Stat(path)
	if err != nil {
		return s, fmt.Errorf("space_file: %w", err)
	}
	if info.Size() > MaxSpecBytes {
		return s, fmt.Errorf("space_file: %s is %d bytes, over the spec's limit of %d", path, info.Size(), MaxSpecBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return s, fmt.Errorf("space_file: %w", err)
	}
	space, forbidden, err := hpo.ReadConfigSpace(data)
	if err != nil {
		return s, fmt.Errorf("space_file: %s: %w", path, err)
	}
	s.Space, s.Forbidden, s.SpaceFile = space, forbidden, ""
	return s, nil
}

// validateSpace checks the space and its forbidden clauses; a space_file
// left unread is an error (ExpandSpaceFile).
func (s CampaignSpec) validateSpace() error {
	if s.SpaceFile != "" {
		return fmt.Errorf("space_file: %s was not read; LoadSpec reads it, and a spec decoded from data needs CampaignSpec.ExpandSpaceFile before it is validated or submitted", s.SpaceFile)
	}
	if err := s.Space.Validate(); err != nil {
		return err
	}
	return hpo.ValidateForbidden(s.Space, s.Forbidden)
}
