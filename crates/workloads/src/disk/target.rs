//! Where a disk run does its I/O: the file it creates (and always removes), or the
//! block device it was explicitly allowed to use, and the device behind either.
//!
//! The device is found the way iostat users would look for it: the file system's
//! `st_dev` (or a block device's `st_rdev`) is `/sys/dev/block/MAJ:MIN`; a partition's
//! statistics are read from its whole disk (the queue is the disk's). File systems
//! with anonymous device numbers (btrfs) are followed through `/proc/self/mountinfo`
//! to their source device. tmpfs and overlay have no block device: the run goes on
//! without iostat figures and says so.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use super::spec::DiskSpec;
use super::{bad, DiskError};
use perflab_units::Phrase;

/// The block device behind a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockDevice {
    /// The whole disk whose statistics are read (`vda`, `nvme0n1`, `dm-0`, `loop3`).
    pub name: String,
    /// The partition the data lives on, when it is one (`vda1`).
    pub partition: Option<String>,
    /// The disk's logical block size (`queue/logical_block_size`), bytes.
    pub logical_block_size: u32,
}

/// Removes the file it guards when dropped: on success, on error, on panic.
#[derive(Debug)]
pub struct FileGuard {
    path: Option<PathBuf>,
}

impl FileGuard {
    fn new(path: PathBuf) -> FileGuard {
        FileGuard { path: Some(path) }
    }

    /// Removes the file now, reporting a failure (the drop does it silently).
    pub fn remove(&mut self) -> io::Result<()> {
        match self.path.take() {
            Some(p) => std::fs::remove_file(p),
            None => Ok(()),
        }
    }
}

impl Drop for FileGuard {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// A prepared target.
#[derive(Debug)]
pub struct Target {
    /// The file or device the I/O goes to.
    pub path: PathBuf,
    /// Set when `path` is a block device (nothing created, nothing removed).
    pub block_device: bool,
    /// Size of the block device, bytes.
    pub device_size: Option<u64>,
    /// Present when the run created `path`: dropping it removes the file.
    pub guard: Option<FileGuard>,
    pub device: Option<BlockDevice>,
    /// File-system type (`ext4`, `xfs`, `tmpfs`), from mountinfo.
    pub fs_type: Option<String>,
    /// Alignment O_DIRECT needs for sizes and offsets here, when known.
    pub dio_align: Option<u32>,
    /// How `dio_align` was learned, for messages.
    pub dio_align_source: String,
}

/// Resolves PATH, checks what can be checked there, and creates the file.
pub fn prepare(spec: &DiskSpec) -> Result<Target, DiskError> {
    let path = &spec.path;
    let meta = match std::fs::metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(DiskError::io(
                format!("cannot inspect {}", path.display()),
                e,
            ))
        }
    };
    let is_blk = meta
        .as_ref()
        .is_some_and(|m| m.file_type().is_block_device());
    if spec.i_know_this_destroys_data.is_some() && !is_blk {
        return bad(Phrase::field("i_know_this_destroys_data").then(format!(
            " is only for block devices, and {} is not one",
            path.display()
        )));
    }
    if is_blk {
        return prepare_device(spec, meta.as_ref().map(|m| m.rdev()).unwrap_or(0));
    }
    let file = file_to_create(path, meta.as_ref())?;
    prepare_file(spec, file)
}

/// Finds the file's directory's file system and device, creates the file, and learns
/// the alignment O_DIRECT needs there.
fn prepare_file(spec: &DiskSpec, file: PathBuf) -> Result<Target, DiskError> {
    let dir = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir_dev = std::fs::metadata(dir)
        .map_err(|e| DiskError::io(format!("cannot inspect {}", dir.display()), e))?
        .dev();
    let (fs_type, source) = mount_of(dir_dev).unzip();
    let device = device_of(dir_dev).or_else(|| source.as_deref().and_then(device_of_source));
    if spec.direct {
        if let Some(d) = &device {
            check_alignment(
                spec,
                d.logical_block_size,
                &format!("the logical block size of /dev/{}", d.name),
            )?;
        }
    }
    let created = create_new(&file)?;
    let guard = FileGuard::new(file.clone());
    let (dio_align, source_desc) =
        dio_alignment(spec, &created, dir, fs_type.as_deref(), device.as_ref())?;
    drop(created);
    if spec.direct {
        if let Some(a) = dio_align {
            check_alignment(spec, a, &source_desc)?;
        }
    }
    Ok(Target {
        path: file,
        block_device: false,
        device_size: None,
        guard: Some(guard),
        device,
        fs_type,
        dio_align,
        dio_align_source: source_desc,
    })
}

/// Creates `file`, which must not exist: perflab never overwrites a file.
fn create_new(file: &Path) -> Result<File, DiskError> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(file)
        .map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => DiskError::Invalid(
                format!(
                    "{} exists: perflab disk never overwrites a file; give a new name",
                    file.display()
                )
                .into(),
            ),
            _ => DiskError::io(format!("cannot create {}", file.display()), e),
        })
}

/// The alignment O_DIRECT needs for the created file, and where it was learned: the
/// larger of the device's logical block size and the file system's statx figure.
fn dio_alignment(
    spec: &DiskSpec,
    created: &File,
    dir: &Path,
    fs_type: Option<&str>,
    device: Option<&BlockDevice>,
) -> Result<(Option<u32>, String), DiskError> {
    let (mut dio_align, mut source_desc) = (None, String::new());
    if let Some(d) = device {
        dio_align = Some(d.logical_block_size);
        source_desc = format!("the logical block size of /dev/{}", d.name);
    }
    match statx_dio_align(created) {
        Some(0) if spec.direct => {
            return bad(Phrase::text(format!(
                "the file system at {} ({}) does not support O_DIRECT: drop ",
                dir.display(),
                fs_type.unwrap_or("unknown")
            ))
            .and_field("direct")
            .then(" or use another directory"))
        }
        Some(a) if a > 0 => {
            dio_align = Some(dio_align.unwrap_or(0).max(a));
            source_desc = format!(
                "the direct-I/O alignment of {} on {} (statx dio_offset_align {a}{})",
                fs_type.unwrap_or("the file system"),
                dir.display(),
                device
                    .map(|d| format!(
                        ", logical block size of /dev/{} {}",
                        d.name, d.logical_block_size
                    ))
                    .unwrap_or_default()
            );
        }
        _ => {}
    }
    Ok((dio_align, source_desc))
}

/// The file to create for PATH: a fresh name inside a directory, or PATH itself when
/// it is a new name in an existing directory. An existing file is never reused.
fn file_to_create(path: &Path, meta: Option<&std::fs::Metadata>) -> Result<PathBuf, DiskError> {
    Ok(match meta {
        Some(m) if m.is_dir() => path.join(format!(
            "perflab-disk-{}-{}.tmp",
            std::process::id(),
            nanos()
        )),
        Some(m) if m.is_file() => {
            return bad(format!(
                "{} exists: perflab disk creates its own file and removes it afterwards, so it never overwrites one; give a new file name or a directory",
                path.display()
            ))
        }
        Some(_) => {
            return bad(format!(
                "{} is neither a directory, a new file name nor a block device",
                path.display()
            ))
        }
        None if path.as_os_str().as_encoded_bytes().ends_with(b"/") => {
            return bad(format!(
                "directory {} does not exist: PATH must be a directory or a new file in an existing directory",
                path.display()
            ))
        }
        None => {
            let parent = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            };
            if !parent.is_dir() {
                return bad(format!(
                    "directory {} does not exist: PATH must be a directory or a new file in an existing directory",
                    parent.display()
                ));
            }
            path.to_path_buf()
        }
    })
}

fn prepare_device(spec: &DiskSpec, rdev: u64) -> Result<Target, DiskError> {
    let path = &spec.path;
    if spec.mode.is_write() {
        let allowed = spec
            .i_know_this_destroys_data
            .as_ref()
            .and_then(|d| std::fs::metadata(d).ok())
            .is_some_and(|m| m.file_type().is_block_device() && m.rdev() == rdev);
        if !allowed {
            return bad(Phrase::text(format!(
                "refusing to write to the block device {}: it destroys the data on it; if \
                     that is what you want, add ",
                path.display()
            ))
            .and_field("i_know_this_destroys_data")
            .then(format!(" {}", path.display())));
        }
        if let Some(at) = mounted_at(rdev) {
            return bad(format!(
                "{} is mounted at {at}: refusing to write to a mounted device",
                path.display()
            ));
        }
    }
    let device = device_of(rdev);
    let size = File::open(path)
        .and_then(|mut f| io::Seek::seek(&mut f, io::SeekFrom::End(0)))
        .map_err(|e| DiskError::io(format!("cannot open {}", path.display()), e))?;
    if spec.total_bytes() > size {
        return bad(Phrase::text(format!(
            "{} holds {size} bytes, less than the {} bytes asked for: lower ",
            path.display(),
            spec.total_bytes()
        ))
        .and_field("size")
        .then(" or ")
        .and_field("count"));
    }
    let lbs = device.as_ref().map(|d| d.logical_block_size);
    let desc = format!("the logical block size of {}", path.display());
    if spec.direct {
        if let Some(a) = lbs {
            check_alignment(spec, a, &desc)?;
        }
    }
    Ok(Target {
        path: path.clone(),
        block_device: true,
        device_size: Some(size),
        guard: None,
        device,
        fs_type: None,
        dio_align: lbs,
        dio_align_source: desc,
    })
}

// `is_multiple_of` needs Rust 1.87; the workspace's rust-version is 1.80.
#[allow(clippy::manual_is_multiple_of)]
fn check_alignment(spec: &DiskSpec, align: u32, what: &str) -> Result<(), DiskError> {
    let a = u64::from(align.max(1));
    if spec.bs.0 % a != 0 {
        let up = spec.bs.0.div_ceil(a) * a;
        return Err(DiskError::Invalid(Phrase::field("bs").then(format!(" {} is not a multiple of {a} bytes, {what}: O_DIRECT needs sizes and offsets aligned to it; use e.g. ", spec.bs)).and_field("bs").then(format!(" {up} or ")).and_field("bs").then(" 4k, or drop ").and_field("direct")));
    }
    Ok(())
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn major_minor(dev: u64) -> (u32, u32) {
    (libc::major(dev), libc::minor(dev))
}

/// The block device with number `dev`, partitions resolved to their disk.
pub fn device_of(dev: u64) -> Option<BlockDevice> {
    let (maj, min) = major_minor(dev);
    let sys = PathBuf::from(format!("/sys/dev/block/{maj}:{min}"));
    let real = std::fs::canonicalize(&sys).ok()?;
    let own = real.file_name()?.to_string_lossy().into_owned();
    let (name, partition, disk_dir) = if real.join("partition").exists() {
        let disk = real.parent()?;
        (
            disk.file_name()?.to_string_lossy().into_owned(),
            Some(own),
            disk.to_path_buf(),
        )
    } else {
        (own, None, real.clone())
    };
    let logical_block_size = std::fs::read_to_string(disk_dir.join("queue/logical_block_size"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(512);
    Some(BlockDevice {
        name,
        partition,
        logical_block_size,
    })
}

/// The device behind a mount source such as `/dev/vda1` (btrfs, whose `st_dev` is
/// anonymous).
fn device_of_source(source: &str) -> Option<BlockDevice> {
    let m = std::fs::metadata(source).ok()?;
    m.file_type()
        .is_block_device()
        .then(|| device_of(m.rdev()))
        .flatten()
}

/// One `/proc/self/mountinfo` line: (maj:min, mount point, fs type, source).
fn mountinfo() -> Vec<(String, String, String, String)> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let lf: Vec<&str> = left.split_whitespace().collect();
            let rf: Vec<&str> = right.split_whitespace().collect();
            Some((
                lf.get(2)?.to_string(),
                unescape(lf.get(4)?),
                rf.first()?.to_string(),
                unescape(rf.get(1)?),
            ))
        })
        .collect()
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// File-system type and source of the mount whose device is `dev`.
fn mount_of(dev: u64) -> Option<(String, String)> {
    let (maj, min) = major_minor(dev);
    let key = format!("{maj}:{min}");
    mountinfo()
        .into_iter()
        .rev()
        .find(|m| m.0 == key)
        .map(|m| (m.2, m.3))
}

/// Where block device `rdev`, or a partition of it, is mounted, if anywhere.
fn mounted_at(rdev: u64) -> Option<String> {
    let (maj, min) = major_minor(rdev);
    let key = format!("{maj}:{min}");
    let disk = device_of(rdev).map(|d| d.name);
    mountinfo()
        .into_iter()
        .find(|m| {
            m.0 == key
                || disk.is_some() && {
                    let mut it = m.0.split(':').map(|v| v.parse::<u32>().ok());
                    match (it.next().flatten(), it.next().flatten()) {
                        (Some(a), Some(b)) => {
                            device_of(libc::makedev(a, b)).map(|d| d.name) == disk
                        }
                        _ => false,
                    }
                }
        })
        .map(|m| m.1)
}

/// `statx(STATX_DIOALIGN)`'s offset alignment: `Some(0)` when the file system says it
/// has no direct I/O, `None` when it does not say (kernels before 6.1, most file
/// systems other than ext4/xfs/f2fs/btrfs).
fn statx_dio_align(f: &File) -> Option<u32> {
    // SAFETY: zeroed statx is a valid out-buffer; the fd is open; the empty path with
    // AT_EMPTY_PATH means "this fd".
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    let rc = unsafe {
        libc::statx(
            f.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut st,
        )
    };
    (rc == 0 && st.stx_mask & libc::STATX_DIOALIGN != 0).then_some(st.stx_dio_offset_align)
}

/// Fraction of the first `len` bytes of `f` resident in the page cache (mincore over
/// a shared read-only mapping); `None` when it cannot be mapped.
pub fn resident_fraction(f: &File, len: u64) -> Option<f64> {
    if len == 0 {
        return Some(0.0);
    }
    let len = usize::try_from(len).ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    // SAFETY: a fresh shared read-only mapping of an open fd; unmapped below.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return None;
    }
    let pages = len.div_ceil(page);
    let mut vec = vec![0u8; pages];
    // SAFETY: addr/len is our mapping; vec has one byte per page.
    let rc = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    // SAFETY: unmapping what we mapped.
    unsafe { libc::munmap(addr, len) };
    if rc != 0 {
        return None;
    }
    Some(vec.iter().filter(|b| *b & 1 == 1).count() as f64 / pages as f64)
}

/// `posix_fadvise(POSIX_FADV_DONTNEED)` over the whole file: clean pages leave the
/// page cache.
pub fn drop_cache(f: &File) -> io::Result<()> {
    // SAFETY: plain syscall on an open fd.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// A readable form of a path for messages (lossless for UTF-8 paths).
pub fn show(p: &Path) -> String {
    String::from_utf8_lossy(p.as_os_str().as_bytes()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape(r"/mnt/a\040b"), "/mnt/a b");
        assert_eq!(unescape(r"/x\\"), r"/x\\");
        assert_eq!(unescape("/plain"), "/plain");
    }

    #[test]
    fn the_device_of_the_root_file_system_resolves_when_it_has_one() {
        let dev = std::fs::metadata("/").unwrap().dev();
        if let Some(d) = device_of(dev) {
            assert!(!d.name.is_empty());
            assert!(d.logical_block_size >= 512);
            assert!(Path::new(&format!("/sys/block/{}", d.name)).exists());
        }
    }
}
