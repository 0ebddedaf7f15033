/* sdnotify.h - tells the service manager how jrpcd is doing, by systemd's
 * documented notification protocol (sd_notify(3)) rather than libsystemd,
 * so that jrpcd builds and runs where systemd is absent: one datagram of
 * "KEY=VALUE" lines to the AF_UNIX socket named by $NOTIFY_SOCKET. Without
 * that variable every call does nothing. Main thread only. */
#ifndef JRPCD_SDNOTIFY_H
#define JRPCD_SDNOTIFY_H

/* Reads $NOTIFY_SOCKET (a path, or "@name" for the abstract namespace) and
 * removes it from the environment, so that only jrpcd itself, not the
 * children a plugin may start, speaks for the service. 0 (also when it is
 * unset), or a negative errno when it is set but unusable. */
int jrpcd_notify_open(void);

/* Sends one state update ("READY=1\nSTATUS=serving"). 0, or a negative
 * errno; 0 without a notification socket. */
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
int jrpcd_notify(const char *fmt, ...);

/* RELOADING=1 with MONOTONIC_USEC, which systemd wants alongside it to tell
 * this reload from an earlier one. */
int jrpcd_notify_reloading(void);

void jrpcd_notify_close(void);

#endif
