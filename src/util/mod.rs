//! Small building blocks shared by every format: integer coding and checksums.

pub mod coding;
pub mod crc;
