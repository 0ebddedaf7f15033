/* nats_dl.h - the NATS C client (Debian's libnats), loaded with dlopen
 * when a [cluster] section first needs it, not linked: a jrpcd without
 * [cluster] maps none of it (nor the libraries it pulls in), and a machine
 * without the library still runs every other part of jrpcd. cluster.c
 * calls the client only through the table this returns. */
#ifndef JRPCD_NATS_DL_H
#define JRPCD_NATS_DL_H

#include <nats/nats.h>
#include <stddef.h>

/* The client's functions that cluster.c uses, by their own names. */
#define JRPCD_NATS_FUNCS(X)                                                    \
  X(natsOptions_Create)                                                        \
  X(natsOptions_Destroy)                                                       \
  X(natsOptions_SetServers)                                                    \
  X(natsOptions_SetName)                                                       \
  X(natsOptions_SetMaxReconnect)                                               \
  X(natsOptions_SetReconnectWait)                                              \
  X(natsOptions_SetReconnectJitter)                                            \
  X(natsOptions_SetReconnectBufSize)                                           \
  X(natsOptions_SetRetryOnFailedConnect)                                       \
  X(natsOptions_SetDisconnectedCB)                                             \
  X(natsOptions_SetReconnectedCB)                                              \
  X(natsOptions_SetClosedCB)                                                   \
  X(natsOptions_UseGlobalMessageDelivery)                                      \
  X(natsOptions_SetNoEcho)                                                     \
  X(natsOptions_SetUserCredentialsFromFiles)                                   \
  X(natsOptions_SetSecure)                                                     \
  X(natsOptions_LoadCATrustedCertificates)                                     \
  X(natsConnection_Connect)                                                    \
  X(natsConnection_Publish)                                                    \
  X(natsConnection_Subscribe)                                                  \
  X(natsConnection_FlushTimeout)                                               \
  X(natsConnection_Close)                                                      \
  X(natsConnection_Destroy)                                                    \
  X(natsSubscription_Unsubscribe)                                              \
  X(natsSubscription_SetOnCompleteCB)                                          \
  X(natsSubscription_Destroy)                                                  \
  X(natsMsg_GetSubject)                                                        \
  X(natsMsg_GetData)                                                           \
  X(natsMsg_GetDataLength)                                                     \
  X(natsMsg_Destroy)                                                           \
  X(natsStatus_GetText)                                                        \
  X(nats_GetLastError)

#define JRPCD_NATS_FIELD(name) __typeof__(name) *name;
typedef struct jrpcd_nats {
  JRPCD_NATS_FUNCS(JRPCD_NATS_FIELD)
} jrpcd_nats_t;
#undef JRPCD_NATS_FIELD

/* The library's file name as the dynamic loader looks it up (its SONAME,
 * read from the library at configure time). */
const char *jrpcd_nats_soname(void);

/* The client, loaded at the first call (on the main thread: start, reload,
 * -t) and kept for the life of the process (its threads may outlive any
 * one connection). NULL, with why in err, when it cannot be loaded. */
const jrpcd_nats_t *jrpcd_nats_load(char *err, size_t errlen);

#endif
