//! Small building blocks shared by every format: integer coding,
//! checksums, and opening the files they live in.

pub mod coding;
pub mod crc;
pub mod file;
