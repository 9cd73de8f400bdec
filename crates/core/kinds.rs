//! One spelling per kind: the enums that people type and scripts read
//! (cause, verdict, status, incident kind, channel, signal kind) name each
//! value once, in `spelling!`, and serde, `Display`, `FromStr` and the
//! [`Spelling`] trait (which the CLI's argument parsers read) all take it
//! from there. A value that is not one of them is an [`UnknownName`] that
//! lists the ones there are.

use std::fmt;

/// A name that is none of a kind's values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{given:?}: one of {}", expected.join(", "))]
pub struct UnknownName {
    pub given: String,
    pub expected: &'static [&'static str],
}

/// Writes a kind's name (for `Display`).
pub fn write_name(f: &mut fmt::Formatter<'_>, name: &str) -> fmt::Result {
    f.pad(name)
}

/// A kind whose values each have one spelling (see `spelling!`).
pub trait Spelling: Sized + Copy + Send + Sync + 'static {
    /// Every value's name, in declaration order.
    const NAMES: &'static [&'static str];
    /// The value's name.
    fn name(self) -> &'static str;
    /// The value of this name, or what the names are.
    fn from_name(s: &str) -> Result<Self, UnknownName>;
}

/// Gives an enum of unit variants its one spelling: `as_str`, `ALL`,
/// `NAMES`, `parse` (and `FromStr`), `Display`, serde (as the string) and
/// [`Spelling`].
#[macro_export]
macro_rules! spelling {
    ($name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// Every value's name, as typed and serialised.
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            #[must_use]
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// The value of this name, or what the names are.
            pub fn parse(s: &str) -> Result<Self, $crate::kinds::UnknownName> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err($crate::kinds::UnknownName {
                        given: s.to_string(),
                        expected: Self::NAMES,
                    }),
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::kinds::UnknownName;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::parse(s)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                $crate::kinds::write_name(f, self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
                Self::parse(&s).map_err(|_| serde::de::Error::unknown_variant(&s, Self::NAMES))
            }
        }

        impl $crate::kinds::Spelling for $name {
            const NAMES: &'static [&'static str] = &[$($text),+];
            fn name(self) -> &'static str {
                self.as_str()
            }
            fn from_name(s: &str) -> Result<Self, $crate::kinds::UnknownName> {
                Self::parse(s)
            }
        }
    };
}

pub use crate::spelling;

/// Which delivery an outbox entry is for. Each delivery has its own entries
/// and its own retry state, so one failing never holds back the other.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Channel {
    #[default]
    Email,
    Alertmanager,
}

crate::kinds::spelling!(Channel {
    Email => "email",
    Alertmanager => "alertmanager",
});

#[cfg(test)]
mod tests {
    use super::Channel;
    use crate::signals::{Cause, SignalKind};
    use crate::tracker::{IncidentKind, Status, Verdict};

    fn round_trip<T>(all: &[T])
    where
        T: Copy + PartialEq + std::fmt::Debug + std::fmt::Display + serde::Serialize,
        T: serde::de::DeserializeOwned + super::Spelling + std::str::FromStr,
        <T as std::str::FromStr>::Err: std::fmt::Debug,
    {
        for v in all {
            let json = serde_json::to_string(v).unwrap();
            assert_eq!(json, format!("\"{v}\""));
            assert_eq!(serde_json::from_str::<T>(&json).unwrap(), *v);
            assert_eq!(
                <T as std::str::FromStr>::from_str(&v.to_string()).ok(),
                Some(*v)
            );
            assert_eq!(T::from_name(&v.to_string()).ok(), Some(*v));
            assert_eq!(v.name(), v.to_string());
        }
    }

    #[test]
    fn serde_clap_and_display_spell_each_value_alike() {
        round_trip(Cause::ALL);
        round_trip(SignalKind::ALL);
        round_trip(Verdict::ALL);
        round_trip(Status::ALL);
        round_trip(IncidentKind::ALL);
        round_trip(Channel::ALL);
        assert_eq!(Cause::ListerLag.to_string(), "lister-lag");
        assert_eq!(
            Cause::parse("lister_lag").unwrap_err().to_string(),
            format!("\"lister_lag\": one of {}", Cause::NAMES.join(", "))
        );
        assert!(serde_json::from_str::<Verdict>("\"persistant\"").is_err());
    }
}
