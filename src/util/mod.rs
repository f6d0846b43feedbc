//! Small building blocks shared by every format: integer coding,
//! checksums, opening the files they live in, and aligned copies of
//! their blocks.

pub mod aligned;
pub mod coding;
pub mod crc;
pub mod file;
