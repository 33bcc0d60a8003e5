//! `keys!`: a transition's KEYS declared once, by name and role (see
//! [`Keys`](super::Keys)).

/// Declares a transition's KEYS from one list of `field: Role` pairs, in
/// KEYS order: a struct with one named key a field, and its [`Keys`]
/// (`ROLES`, the description's `keys`; `FORMS`; `bind`). A second list after
/// `more` names the keys a call may leave off, all together (ENQUEUE's nine
/// beyond the seed's two): the struct's `more`, present only when the call
/// passed them. A last `then name: Role` is one more key a call may leave
/// off, after all the others (the counts key): the struct's `Option`
/// field. Reordering a list reorders the description and the names with
/// it; nothing reads a key by its position.
macro_rules! keys {
    ($(#[$meta:meta])* $name:ident { $($field:ident: $role:ident),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $name<'k> {
            $(
                #[doc = concat!("The `", stringify!($field), "` key ([`Role::", stringify!($role), "`](crate::description::Role::", stringify!($role), ")).")]
                pub(crate) $field: &'k [u8],
            )+
        }

        impl $name<'_> {
            /// The roles of the keys, in KEYS order: the description's `keys`.
            pub(crate) const ROLES: &'static [$crate::description::Role] = &[$($crate::description::Role::$role),+];
            /// How many keys a call sends: all of them.
            pub(crate) const FORMS: &'static [usize] = &[Self::ROLES.len()];
        }

        impl<'k> $name<'k> {
            /// Every key, in KEYS order, for the transitions that treat
            /// them alike (each checked for its role's type, each deleted).
            #[allow(dead_code)]
            pub(crate) fn all(&self) -> [&'k [u8]; [$(stringify!($field)),+].len()] {
                [$(self.$field),+]
            }
        }

        impl<'k> $crate::description::Keys<'k> for $name<'k> {
            const ROLES: &'static [$crate::description::Role] = Self::ROLES;
            const FORMS: &'static [usize] = Self::FORMS;

            fn bind(keys: &[&'k [u8]]) -> Option<Self> {
                match *keys {
                    [$($field),+] => Some($name { $($field),+ }),
                    _ => None,
                }
            }
        }
    };
    (
        $(#[$meta:meta])* $name:ident { $($field:ident: $role:ident),+ $(,)? }
        more $(#[$more_meta:meta])* $more:ident { $($extra:ident: $extra_role:ident),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $name<'k> {
            $(
                #[doc = concat!("The `", stringify!($field), "` key ([`Role::", stringify!($role), "`](crate::description::Role::", stringify!($role), ")).")]
                pub(crate) $field: &'k [u8],
            )+
            /// The keys a call may leave off, when it passed them.
            pub(crate) more: Option<$more<'k>>,
        }

        $(#[$more_meta])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $more<'k> {
            $(
                #[doc = concat!("The `", stringify!($extra), "` key ([`Role::", stringify!($extra_role), "`](crate::description::Role::", stringify!($extra_role), ")).")]
                pub(crate) $extra: &'k [u8],
            )+
        }

        impl $name<'_> {
            /// The roles of the keys, in KEYS order: the description's `keys`.
            pub(crate) const ROLES: &'static [$crate::description::Role] = &[
                $($crate::description::Role::$role,)+
                $($crate::description::Role::$extra_role,)+
            ];
            /// How many keys a call may send: the first ones alone, or all.
            pub(crate) const FORMS: &'static [usize] = &[[$(stringify!($field)),+].len(), Self::ROLES.len()];
        }

        impl<'k> $crate::description::Keys<'k> for $name<'k> {
            const ROLES: &'static [$crate::description::Role] = Self::ROLES;
            const FORMS: &'static [usize] = Self::FORMS;

            fn bind(keys: &[&'k [u8]]) -> Option<Self> {
                match *keys {
                    [$($field),+] => Some($name { $($field,)+ more: None }),
                    [$($field,)+ $($extra),+] => Some($name { $($field,)+ more: Some($more { $($extra),+ }) }),
                    _ => None,
                }
            }
        }
    };
    (
        $(#[$meta:meta])* $name:ident { $($field:ident: $role:ident),+ $(,)? }
        then $last:ident: $last_role:ident
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $name<'k> {
            $(
                #[doc = concat!("The `", stringify!($field), "` key ([`Role::", stringify!($role), "`](crate::description::Role::", stringify!($role), ")).")]
                pub(crate) $field: &'k [u8],
            )+
            #[doc = concat!("The `", stringify!($last), "` key, when the call passed it (a last key a call may leave off).")]
            pub(crate) $last: Option<&'k [u8]>,
        }

        impl $name<'_> {
            /// The roles of the keys, in KEYS order: the description's `keys`.
            pub(crate) const ROLES: &'static [$crate::description::Role] = &[
                $($crate::description::Role::$role,)+
                $crate::description::Role::$last_role,
            ];
            /// How many keys a call may send: all but the last, or all.
            pub(crate) const FORMS: &'static [usize] = &[Self::ROLES.len() - 1, Self::ROLES.len()];
        }

        impl<'k> $name<'k> {
            /// Every key but the last one a call may leave off, in KEYS
            /// order, for the transitions that treat them alike.
            #[allow(dead_code)]
            pub(crate) fn all(&self) -> [&'k [u8]; [$(stringify!($field)),+].len()] {
                [$(self.$field),+]
            }
        }

        impl<'k> $crate::description::Keys<'k> for $name<'k> {
            const ROLES: &'static [$crate::description::Role] = Self::ROLES;
            const FORMS: &'static [usize] = Self::FORMS;

            fn bind(keys: &[&'k [u8]]) -> Option<Self> {
                match *keys {
                    [$($field),+] => Some($name { $($field,)+ $last: None }),
                    [$($field,)+ $last] => Some($name { $($field,)+ $last: Some($last) }),
                    _ => None,
                }
            }
        }
    };
    (
        $(#[$meta:meta])* $name:ident { $($field:ident: $role:ident),+ $(,)? }
        more $(#[$more_meta:meta])* $more:ident { $($extra:ident: $extra_role:ident),+ $(,)? }
        then $last:ident: $last_role:ident
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $name<'k> {
            $(
                #[doc = concat!("The `", stringify!($field), "` key ([`Role::", stringify!($role), "`](crate::description::Role::", stringify!($role), ")).")]
                pub(crate) $field: &'k [u8],
            )+
            /// The keys a call may leave off, when it passed them.
            pub(crate) more: Option<$more<'k>>,
            #[doc = concat!("The `", stringify!($last), "` key, when the call passed it: only after `more`.")]
            pub(crate) $last: Option<&'k [u8]>,
        }

        $(#[$more_meta])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $more<'k> {
            $(
                #[doc = concat!("The `", stringify!($extra), "` key ([`Role::", stringify!($extra_role), "`](crate::description::Role::", stringify!($extra_role), ")).")]
                pub(crate) $extra: &'k [u8],
            )+
        }

        impl $name<'_> {
            /// The roles of the keys, in KEYS order: the description's `keys`.
            pub(crate) const ROLES: &'static [$crate::description::Role] = &[
                $($crate::description::Role::$role,)+
                $($crate::description::Role::$extra_role,)+
                $crate::description::Role::$last_role,
            ];
            /// How many keys a call may send: the first ones alone, with
            /// `more`, or with `more` and the last.
            pub(crate) const FORMS: &'static [usize] =
                &[[$(stringify!($field)),+].len(), Self::ROLES.len() - 1, Self::ROLES.len()];
        }

        impl<'k> $crate::description::Keys<'k> for $name<'k> {
            const ROLES: &'static [$crate::description::Role] = Self::ROLES;
            const FORMS: &'static [usize] = Self::FORMS;

            fn bind(keys: &[&'k [u8]]) -> Option<Self> {
                match *keys {
                    [$($field),+] => Some($name { $($field,)+ more: None, $last: None }),
                    [$($field,)+ $($extra),+] => {
                        Some($name { $($field,)+ more: Some($more { $($extra),+ }), $last: None })
                    }
                    [$($field,)+ $($extra,)+ $last] => {
                        Some($name { $($field,)+ more: Some($more { $($extra),+ }), $last: Some($last) })
                    }
                    _ => None,
                }
            }
        }
    };
    (
        $(#[$meta:meta])* $name:ident { $($field:ident: $role:ident),+ $(,)? }
        then $last:ident: $last_role:ident
        flow $(#[$flow_meta:meta])* $flow:ident { $($step:ident: $step_role:ident),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $name<'k> {
            $(
                #[doc = concat!("The `", stringify!($field), "` key ([`Role::", stringify!($role), "`](crate::description::Role::", stringify!($role), ")).")]
                pub(crate) $field: &'k [u8],
            )+
            #[doc = concat!("The `", stringify!($last), "` key, when the call passed it (a last key a call may leave off).")]
            pub(crate) $last: Option<&'k [u8]>,
            /// The flows' keys (protocol 1.6), when the call passed them: only after the last.
            pub(crate) flow: Option<$flow<'k>>,
        }

        keys!(@flow $(#[$flow_meta])* $flow { $($step: $step_role),+ });

        impl $name<'_> {
            /// The roles of the keys, in KEYS order: the description's `keys`.
            pub(crate) const ROLES: &'static [$crate::description::Role] = &[
                $($crate::description::Role::$role,)+
                $crate::description::Role::$last_role,
                $($crate::description::Role::$step_role,)+
            ];
            /// How many keys a call may send: the first ones, with the
            /// last, or with the last and the flows' keys.
            pub(crate) const FORMS: &'static [usize] = &[
                [$(stringify!($field)),+].len(),
                [$(stringify!($field)),+].len() + 1,
                Self::ROLES.len(),
            ];
        }

        impl<'k> $name<'k> {
            /// Every key but those a call may leave off, in KEYS order.
            #[allow(dead_code)]
            pub(crate) fn all(&self) -> [&'k [u8]; [$(stringify!($field)),+].len()] {
                [$(self.$field),+]
            }
        }

        impl<'k> $crate::description::Keys<'k> for $name<'k> {
            const ROLES: &'static [$crate::description::Role] = Self::ROLES;
            const FORMS: &'static [usize] = Self::FORMS;

            fn bind(keys: &[&'k [u8]]) -> Option<Self> {
                match *keys {
                    [$($field),+] => Some($name { $($field,)+ $last: None, flow: None }),
                    [$($field,)+ $last] => Some($name { $($field,)+ $last: Some($last), flow: None }),
                    [$($field,)+ $last, $($step),+] => {
                        Some($name { $($field,)+ $last: Some($last), flow: Some($flow { $($step),+ }) })
                    }
                    _ => None,
                }
            }
        }
    };
    (
        $(#[$meta:meta])* $name:ident { $($field:ident: $role:ident),+ $(,)? }
        flow $(#[$flow_meta:meta])* $flow:ident { $($step:ident: $step_role:ident),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $name<'k> {
            $(
                #[doc = concat!("The `", stringify!($field), "` key ([`Role::", stringify!($role), "`](crate::description::Role::", stringify!($role), ")).")]
                pub(crate) $field: &'k [u8],
            )+
            /// The flows' keys (protocol 1.6), when the call passed them.
            pub(crate) flow: Option<$flow<'k>>,
        }

        keys!(@flow $(#[$flow_meta])* $flow { $($step: $step_role),+ });

        impl $name<'_> {
            /// The roles of the keys, in KEYS order: the description's `keys`.
            pub(crate) const ROLES: &'static [$crate::description::Role] = &[
                $($crate::description::Role::$role,)+
                $($crate::description::Role::$step_role,)+
            ];
            /// How many keys a call may send: the first ones, or with the flows' keys.
            pub(crate) const FORMS: &'static [usize] = &[[$(stringify!($field)),+].len(), Self::ROLES.len()];
        }

        impl<'k> $name<'k> {
            /// Every key but the flows', in KEYS order.
            #[allow(dead_code)]
            pub(crate) fn all(&self) -> [&'k [u8]; [$(stringify!($field)),+].len()] {
                [$(self.$field),+]
            }
        }

        impl<'k> $crate::description::Keys<'k> for $name<'k> {
            const ROLES: &'static [$crate::description::Role] = Self::ROLES;
            const FORMS: &'static [usize] = Self::FORMS;

            fn bind(keys: &[&'k [u8]]) -> Option<Self> {
                match *keys {
                    [$($field),+] => Some($name { $($field,)+ flow: None }),
                    [$($field,)+ $($step),+] => Some($name { $($field,)+ flow: Some($flow { $($step),+ }) }),
                    _ => None,
                }
            }
        }
    };
    (
        $(#[$meta:meta])* $name:ident { $($field:ident: $role:ident),+ $(,)? }
        more $(#[$more_meta:meta])* $more:ident { $($extra:ident: $extra_role:ident),+ $(,)? }
        then $last:ident: $last_role:ident
        flow $(#[$flow_meta:meta])* $flow:ident { $($step:ident: $step_role:ident),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $name<'k> {
            $(
                #[doc = concat!("The `", stringify!($field), "` key ([`Role::", stringify!($role), "`](crate::description::Role::", stringify!($role), ")).")]
                pub(crate) $field: &'k [u8],
            )+
            /// The keys a call may leave off, when it passed them.
            pub(crate) more: Option<$more<'k>>,
            #[doc = concat!("The `", stringify!($last), "` key, when the call passed it: only after `more`.")]
            pub(crate) $last: Option<&'k [u8]>,
            /// The flows' keys (protocol 1.6), when the call passed them: only after the last.
            pub(crate) flow: Option<$flow<'k>>,
        }

        $(#[$more_meta])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $more<'k> {
            $(
                #[doc = concat!("The `", stringify!($extra), "` key ([`Role::", stringify!($extra_role), "`](crate::description::Role::", stringify!($extra_role), ")).")]
                pub(crate) $extra: &'k [u8],
            )+
        }

        keys!(@flow $(#[$flow_meta])* $flow { $($step: $step_role),+ });

        impl $name<'_> {
            /// The roles of the keys, in KEYS order: the description's `keys`.
            pub(crate) const ROLES: &'static [$crate::description::Role] = &[
                $($crate::description::Role::$role,)+
                $($crate::description::Role::$extra_role,)+
                $crate::description::Role::$last_role,
                $($crate::description::Role::$step_role,)+
            ];
            /// How many keys a call may send: the first ones alone, with
            /// `more`, with `more` and the last, or with the flows' keys too.
            pub(crate) const FORMS: &'static [usize] = &[
                [$(stringify!($field)),+].len(),
                [$(stringify!($field)),+].len() + [$(stringify!($extra)),+].len(),
                [$(stringify!($field)),+].len() + [$(stringify!($extra)),+].len() + 1,
                Self::ROLES.len(),
            ];
        }

        impl<'k> $crate::description::Keys<'k> for $name<'k> {
            const ROLES: &'static [$crate::description::Role] = Self::ROLES;
            const FORMS: &'static [usize] = Self::FORMS;

            fn bind(keys: &[&'k [u8]]) -> Option<Self> {
                match *keys {
                    [$($field),+] => Some($name { $($field,)+ more: None, $last: None, flow: None }),
                    [$($field,)+ $($extra),+] => {
                        Some($name { $($field,)+ more: Some($more { $($extra),+ }), $last: None, flow: None })
                    }
                    [$($field,)+ $($extra,)+ $last] => Some($name {
                        $($field,)+
                        more: Some($more { $($extra),+ }),
                        $last: Some($last),
                        flow: None,
                    }),
                    [$($field,)+ $($extra,)+ $last, $($step),+] => Some($name {
                        $($field,)+
                        more: Some($more { $($extra),+ }),
                        $last: Some($last),
                        flow: Some($flow { $($step),+ }),
                    }),
                    _ => None,
                }
            }
        }
    };
    (@flow $(#[$flow_meta:meta])* $flow:ident { $($step:ident: $step_role:ident),+ }) => {
        $(#[$flow_meta])*
        #[derive(Clone, Copy, Debug)]
        pub(crate) struct $flow<'k> {
            $(
                #[doc = concat!("The `", stringify!($step), "` key ([`Role::", stringify!($step_role), "`](crate::description::Role::", stringify!($step_role), ")).")]
                pub(crate) $step: &'k [u8],
            )+
        }
    };
}
pub(crate) use keys;
