package toolsearch

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// vectorCache is the file of one model's tool vectors: a log of records,
// each the tool's digest (32 bytes), the vector's length n (uint32), n
// float32s and the CRC-32 (Castagnoli) of all that, little-endian. Records
// are only appended. A torn or damaged record (a crash mid-append) and all
// after it are cut off when the file is opened, and those tools embedded
// again: a cache loses vectors, never serves a wrong one.
type vectorCache struct {
	path string
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maxDims bounds a record's vector length, so that a damaged length cannot
// make opening allocate gigabytes; embedding models give a few thousand.
const maxDims = 1 << 16

// cacheFile names model's file in dir: readable, and unique per model.
func cacheFile(dir, model string) string {
	sum := sha256.Sum256([]byte(model))
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, model)
	return filepath.Join(dir, fmt.Sprintf("%.40s-%s.vectors", safe, hex.EncodeToString(sum[:6])))
}

// openVectorCache opens (creating) model's file in dir and reads its
// vectors by digest.
func openVectorCache(dir, model string) (*vectorCache, map[[32]byte][]float32, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	path := cacheFile(dir, model)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, err
	}
	vs := map[[32]byte][]float32{}
	r := bufio.NewReader(f)
	var good int64
	for {
		d, v, n, err := readRecord(r)
		if err != nil {
			break // io.EOF, or a torn or damaged record: cut off below
		}
		vs[d] = v
		good += n
	}
	err = f.Truncate(good)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, nil, err
	}
	return &vectorCache{path: path}, vs, nil
}

func readRecord(r io.Reader) (digest [32]byte, v []float32, n int64, err error) {
	var head [36]byte
	if _, err = io.ReadFull(r, head[:]); err != nil {
		return digest, nil, 0, err
	}
	dims := binary.LittleEndian.Uint32(head[32:])
	if dims == 0 || dims > maxDims {
		return digest, nil, 0, errors.New("bad vector length")
	}
	body := make([]byte, 4*int(dims)+4)
	if _, err = io.ReadFull(r, body); err != nil {
		return digest, nil, 0, err
	}
	crc := crc32.Update(crc32.Checksum(head[:], castagnoli), castagnoli, body[:4*dims])
	if crc != binary.LittleEndian.Uint32(body[4*dims:]) {
		return digest, nil, 0, errors.New("bad checksum")
	}
	copy(digest[:], head[:32])
	v = make([]float32, dims)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(body[4*i:]))
	}
	return digest, v, int64(len(head) + len(body)), nil
}

// append writes one record per vector, in one write; the file is open only
// meanwhile, so a Searcher holds no descriptor.
func (c *vectorCache) append(digests [][32]byte, vs [][]float32) error {
	var b []byte
	for i, v := range vs {
		start := len(b)
		b = append(b, digests[i][:]...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
		b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
	}
	f, err := os.OpenFile(c.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
