"""JetStream API errors as data: nats-server's error table as typed identifiers.

Every entry of nats-server's `server/errors.json` (the oracle) is one member
of the enum `Err`, valued `ErrorSpec(code, err_code, description)`. A
handler raises `ApiError(Err.STREAM_NOT_FOUND)` (or with fields, e.g.
`ApiError(Err.STREAM_WRONG_LAST_SEQUENCE, seq=7)`), and the dispatcher turns
it into `{"type": ..., "error": {"code", "err_code", "description"}}`. A
misspelled identifier is a type error (mypy) and an AttributeError at import,
never a KeyError while answering a client.

Member names are nats-server's constant names without the "JS" prefix and
the "Err"/"ErrF"/"F" suffix, in upper snake case (JSStreamNotFoundErr ->
STREAM_NOT_FOUND, JSStreamWrongLastMsgIDErrF -> STREAM_WRONG_LAST_MSG_ID);
the comment after each names the constant. Descriptions may carry
`{placeholders}` filled from the keyword arguments of `ApiError`; a
placeholder left without a value stays as written.

Invariants: members are sorted by err_code and err_codes are unique (so no
member is an alias of another); tests/server/unit/test_errors.py checks the
table against nats-server's facts, entry by entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class ErrorSpec:
    code: int
    err_code: int
    description: str


class Err(Enum):
    """nats-server's error identifiers (its `ErrorIdentifier` constants)."""

    ACCOUNT_RESOURCES_EXCEEDED = ErrorSpec(400, 10002, 'resource limits exceeded for account')  # JSAccountResourcesExceededErr
    BAD_REQUEST = ErrorSpec(400, 10003, 'bad request')  # JSBadRequestErr
    CLUSTER_INCOMPLETE = ErrorSpec(503, 10004, 'incomplete results')  # JSClusterIncompleteErr
    CLUSTER_NO_PEERS = ErrorSpec(400, 10005, '{err}')  # JSClusterNoPeersErrF
    CLUSTER_NOT_ACTIVE = ErrorSpec(500, 10006, 'JetStream not in clustered mode')  # JSClusterNotActiveErr
    CLUSTER_NOT_ASSIGNED = ErrorSpec(500, 10007, 'JetStream cluster not assigned to this server')  # JSClusterNotAssignedErr
    CLUSTER_NOT_AVAIL = ErrorSpec(503, 10008, 'JetStream system temporarily unavailable')  # JSClusterNotAvailErr
    CLUSTER_NOT_LEADER = ErrorSpec(500, 10009, 'JetStream cluster can not handle request')  # JSClusterNotLeaderErr
    CLUSTER_REQUIRED = ErrorSpec(503, 10010, 'JetStream clustering support required')  # JSClusterRequiredErr
    CLUSTER_TAGS = ErrorSpec(400, 10011, 'tags placement not supported for operation')  # JSClusterTagsErr
    CONSUMER_CREATE = ErrorSpec(500, 10012, '{err}')  # JSConsumerCreateErrF
    CONSUMER_NAME_EXIST = ErrorSpec(400, 10013, 'consumer name already in use')  # JSConsumerNameExistErr
    CONSUMER_NOT_FOUND = ErrorSpec(404, 10014, 'consumer not found')  # JSConsumerNotFoundErr
    SNAPSHOT_DELIVER_SUBJECT_INVALID = ErrorSpec(400, 10015, 'deliver subject not valid')  # JSSnapshotDeliverSubjectInvalidErr
    CONSUMER_DURABLE_NAME_NOT_IN_SUBJECT = ErrorSpec(400, 10016, 'consumer expected to be durable but no durable name set in subject')  # JSConsumerDurableNameNotInSubjectErr
    CONSUMER_DURABLE_NAME_NOT_MATCH_SUBJECT = ErrorSpec(400, 10017, 'consumer name in subject does not match durable name in request')  # JSConsumerDurableNameNotMatchSubjectErr
    CONSUMER_DURABLE_NAME_NOT_SET = ErrorSpec(400, 10018, 'consumer expected to be durable but a durable name was not set')  # JSConsumerDurableNameNotSetErr
    CONSUMER_EPHEMERAL_WITH_DURABLE_IN_SUBJECT = ErrorSpec(400, 10019, 'consumer expected to be ephemeral but detected a durable name set in subject')  # JSConsumerEphemeralWithDurableInSubjectErr
    CONSUMER_EPHEMERAL_WITH_DURABLE_NAME = ErrorSpec(400, 10020, 'consumer expected to be ephemeral but a durable name was set in request')  # JSConsumerEphemeralWithDurableNameErr
    STREAM_EXTERNAL_API_OVERLAP = ErrorSpec(400, 10021, 'stream external api prefix {prefix} must not overlap with {subject}')  # JSStreamExternalApiOverlapErrF
    STREAM_EXTERNAL_DEL_PREFIX_OVERLAPS = ErrorSpec(400, 10022, 'stream external delivery prefix {prefix} overlaps with stream subject {subject}')  # JSStreamExternalDelPrefixOverlapsErrF
    INSUFFICIENT_RESOURCES = ErrorSpec(503, 10023, 'insufficient resources')  # JSInsufficientResourcesErr
    STREAM_INVALID_EXTERNAL_DELIVERY_SUBJ = ErrorSpec(400, 10024, 'stream external delivery prefix {prefix} must not contain wildcards')  # JSStreamInvalidExternalDeliverySubjErrF
    INVALID_JSON = ErrorSpec(400, 10025, 'invalid JSON: {err}')  # JSInvalidJSONErr
    MAXIMUM_CONSUMERS_LIMIT = ErrorSpec(400, 10026, 'maximum consumers limit reached')  # JSMaximumConsumersLimitErr
    MAXIMUM_STREAMS_LIMIT = ErrorSpec(400, 10027, 'maximum number of streams reached')  # JSMaximumStreamsLimitErr
    MEMORY_RESOURCES_EXCEEDED = ErrorSpec(500, 10028, 'insufficient memory resources available')  # JSMemoryResourcesExceededErr
    MIRROR_CONSUMER_SETUP_FAILED = ErrorSpec(500, 10029, '{err}')  # JSMirrorConsumerSetupFailedErrF
    MIRROR_MAX_MESSAGE_SIZE_TOO_BIG = ErrorSpec(400, 10030, 'stream mirror must have max message size >= source')  # JSMirrorMaxMessageSizeTooBigErr
    MIRROR_WITH_SOURCES = ErrorSpec(400, 10031, 'stream mirrors can not also contain other sources')  # JSMirrorWithSourcesErr
    MIRROR_WITH_START_SEQ_AND_TIME = ErrorSpec(400, 10032, 'stream mirrors can not have both start seq and start time configured')  # JSMirrorWithStartSeqAndTimeErr
    MIRROR_WITH_SUBJECT_FILTERS = ErrorSpec(400, 10033, 'stream mirrors can not contain filtered subjects')  # JSMirrorWithSubjectFiltersErr
    MIRROR_WITH_SUBJECTS = ErrorSpec(400, 10034, 'stream mirrors can not contain subjects')  # JSMirrorWithSubjectsErr
    NO_ACCOUNT = ErrorSpec(503, 10035, 'account not found')  # JSNoAccountErr
    CLUSTER_UN_SUPPORT_FEATURE = ErrorSpec(503, 10036, 'not currently supported in clustered mode')  # JSClusterUnSupportFeatureErr
    NO_MESSAGE_FOUND = ErrorSpec(404, 10037, 'no message found')  # JSNoMessageFoundErr
    NOT_EMPTY_REQUEST = ErrorSpec(400, 10038, 'expected an empty request payload')  # JSNotEmptyRequestErr
    NOT_ENABLED_FOR_ACCOUNT = ErrorSpec(503, 10039, 'JetStream not enabled for account')  # JSNotEnabledForAccountErr
    CLUSTER_PEER_NOT_MEMBER = ErrorSpec(400, 10040, 'peer not a member')  # JSClusterPeerNotMemberErr
    RAFT_GENERAL = ErrorSpec(500, 10041, '{err}')  # JSRaftGeneralErrF
    RESTORE_SUBSCRIBE_FAILED = ErrorSpec(500, 10042, 'JetStream unable to subscribe to restore snapshot {subject}: {err}')  # JSRestoreSubscribeFailedErrF
    SEQUENCE_NOT_FOUND = ErrorSpec(400, 10043, 'sequence {seq} not found')  # JSSequenceNotFoundErrF
    CLUSTER_SERVER_NOT_MEMBER = ErrorSpec(400, 10044, 'server is not a member of the cluster')  # JSClusterServerNotMemberErr
    SOURCE_CONSUMER_SETUP_FAILED = ErrorSpec(500, 10045, '{err}')  # JSSourceConsumerSetupFailedErrF
    SOURCE_MAX_MESSAGE_SIZE_TOO_BIG = ErrorSpec(400, 10046, 'stream source must have max message size >= target')  # JSSourceMaxMessageSizeTooBigErr
    STORAGE_RESOURCES_EXCEEDED = ErrorSpec(500, 10047, 'insufficient storage resources available')  # JSStorageResourcesExceededErr
    STREAM_ASSIGNMENT = ErrorSpec(500, 10048, '{err}')  # JSStreamAssignmentErrF
    STREAM_CREATE = ErrorSpec(500, 10049, '{err}')  # JSStreamCreateErrF
    STREAM_DELETE = ErrorSpec(500, 10050, '{err}')  # JSStreamDeleteErrF
    STREAM_GENERAL_ERROR = ErrorSpec(500, 10051, '{err}')  # JSStreamGeneralErrorF
    STREAM_INVALID_CONFIG = ErrorSpec(500, 10052, '{err}')  # JSStreamInvalidConfigF
    STREAM_LIMITS = ErrorSpec(500, 10053, '{err}')  # JSStreamLimitsErrF
    STREAM_MESSAGE_EXCEEDS_MAXIMUM = ErrorSpec(400, 10054, 'message size exceeds maximum allowed')  # JSStreamMessageExceedsMaximumErr
    STREAM_MIRROR_NOT_UPDATABLE = ErrorSpec(400, 10055, 'stream mirror configuration can not be updated')  # JSStreamMirrorNotUpdatableErr
    STREAM_MISMATCH = ErrorSpec(400, 10056, 'stream name in subject does not match request')  # JSStreamMismatchErr
    STREAM_MSG_DELETE_FAILED = ErrorSpec(500, 10057, '{err}')  # JSStreamMsgDeleteFailedF
    STREAM_NAME_EXIST = ErrorSpec(400, 10058, 'stream name already in use with a different configuration')  # JSStreamNameExistErr
    STREAM_NOT_FOUND = ErrorSpec(404, 10059, 'stream not found')  # JSStreamNotFoundErr
    STREAM_NOT_MATCH = ErrorSpec(400, 10060, 'expected stream does not match')  # JSStreamNotMatchErr
    STREAM_REPLICAS_NOT_UPDATABLE = ErrorSpec(400, 10061, 'Replicas configuration can not be updated')  # JSStreamReplicasNotUpdatableErr
    STREAM_RESTORE = ErrorSpec(500, 10062, 'restore failed: {err}')  # JSStreamRestoreErrF
    STREAM_SEQUENCE_NOT_MATCH = ErrorSpec(503, 10063, 'expected stream sequence does not match')  # JSStreamSequenceNotMatchErr
    STREAM_SNAPSHOT = ErrorSpec(500, 10064, 'snapshot failed: {err}')  # JSStreamSnapshotErrF
    STREAM_SUBJECT_OVERLAP = ErrorSpec(400, 10065, 'subjects overlap with an existing stream')  # JSStreamSubjectOverlapErr
    STREAM_TEMPLATE_CREATE = ErrorSpec(500, 10066, '{err}')  # JSStreamTemplateCreateErrF
    STREAM_TEMPLATE_DELETE = ErrorSpec(500, 10067, '{err}')  # JSStreamTemplateDeleteErrF
    STREAM_TEMPLATE_NOT_FOUND = ErrorSpec(404, 10068, 'template not found')  # JSStreamTemplateNotFoundErr
    STREAM_UPDATE = ErrorSpec(500, 10069, '{err}')  # JSStreamUpdateErrF
    STREAM_WRONG_LAST_MSG_ID = ErrorSpec(400, 10070, 'wrong last msg ID: {id}')  # JSStreamWrongLastMsgIDErrF
    STREAM_WRONG_LAST_SEQUENCE = ErrorSpec(400, 10071, 'wrong last sequence: {seq}')  # JSStreamWrongLastSequenceErrF
    TEMP_STORAGE_FAILED = ErrorSpec(500, 10072, 'JetStream unable to open temp storage for restore')  # JSTempStorageFailedErr
    TEMPLATE_NAME_NOT_MATCH_SUBJECT = ErrorSpec(400, 10073, 'template name in subject does not match request')  # JSTemplateNameNotMatchSubjectErr
    STREAM_REPLICAS_NOT_SUPPORTED = ErrorSpec(500, 10074, 'replicas > 1 not supported in non-clustered mode')  # JSStreamReplicasNotSupportedErr
    PEER_REMAP = ErrorSpec(503, 10075, 'peer remap failed')  # JSPeerRemapErr
    NOT_ENABLED = ErrorSpec(503, 10076, 'JetStream not enabled')  # JSNotEnabledErr
    STREAM_STORE_FAILED = ErrorSpec(503, 10077, '{err}')  # JSStreamStoreFailedF
    CONSUMER_CONFIG_REQUIRED = ErrorSpec(400, 10078, 'consumer config required')  # JSConsumerConfigRequiredErr
    CONSUMER_DELIVER_TO_WILDCARDS = ErrorSpec(400, 10079, 'consumer deliver subject has wildcards')  # JSConsumerDeliverToWildcardsErr
    CONSUMER_PUSH_MAX_WAITING = ErrorSpec(400, 10080, 'consumer in push mode can not set max waiting')  # JSConsumerPushMaxWaitingErr
    CONSUMER_DELIVER_CYCLE = ErrorSpec(400, 10081, 'consumer deliver subject forms a cycle')  # JSConsumerDeliverCycleErr
    CONSUMER_MAX_PENDING_ACK_POLICY_REQUIRED = ErrorSpec(400, 10082, 'consumer requires ack policy for max ack pending')  # JSConsumerMaxPendingAckPolicyRequiredErr
    CONSUMER_SMALL_HEARTBEAT = ErrorSpec(400, 10083, 'consumer idle heartbeat needs to be >= 100ms')  # JSConsumerSmallHeartbeatErr
    CONSUMER_PULL_REQUIRES_ACK = ErrorSpec(400, 10084, 'consumer in pull mode requires explicit ack policy on workqueue stream')  # JSConsumerPullRequiresAckErr
    CONSUMER_PULL_NOT_DURABLE = ErrorSpec(400, 10085, 'consumer in pull mode requires a durable name')  # JSConsumerPullNotDurableErr
    CONSUMER_PULL_WITH_RATE_LIMIT = ErrorSpec(400, 10086, 'consumer in pull mode can not have rate limit set')  # JSConsumerPullWithRateLimitErr
    CONSUMER_MAX_WAITING_NEGATIVE = ErrorSpec(400, 10087, 'consumer max waiting needs to be positive')  # JSConsumerMaxWaitingNegativeErr
    CONSUMER_HB_REQUIRES_PUSH = ErrorSpec(400, 10088, 'consumer idle heartbeat requires a push based consumer')  # JSConsumerHBRequiresPushErr
    CONSUMER_FC_REQUIRES_PUSH = ErrorSpec(400, 10089, 'consumer flow control requires a push based consumer')  # JSConsumerFCRequiresPushErr
    CONSUMER_DIRECT_REQUIRES_PUSH = ErrorSpec(400, 10090, 'consumer direct requires a push based consumer')  # JSConsumerDirectRequiresPushErr
    CONSUMER_DIRECT_REQUIRES_EPHEMERAL = ErrorSpec(400, 10091, 'consumer direct requires an ephemeral consumer')  # JSConsumerDirectRequiresEphemeralErr
    CONSUMER_ON_MAPPED = ErrorSpec(400, 10092, 'consumer direct on a mapped consumer')  # JSConsumerOnMappedErr
    CONSUMER_FILTER_NOT_SUBSET = ErrorSpec(400, 10093, 'consumer filter subject is not a valid subset of the interest subjects')  # JSConsumerFilterNotSubsetErr
    CONSUMER_INVALID_POLICY = ErrorSpec(400, 10094, '{err}')  # JSConsumerInvalidPolicyErrF
    CONSUMER_INVALID_SAMPLING = ErrorSpec(400, 10095, 'failed to parse consumer sampling configuration: {err}')  # JSConsumerInvalidSamplingErrF
    STREAM_INVALID = ErrorSpec(500, 10096, 'stream not valid')  # JSStreamInvalidErr
    STREAM_HEADER_EXCEEDS_MAXIMUM = ErrorSpec(400, 10097, 'header size exceeds maximum allowed of 64k')  # JSStreamHeaderExceedsMaximumErr
    CONSUMER_WQ_REQUIRES_EXPLICIT_ACK = ErrorSpec(400, 10098, 'workqueue stream requires explicit ack')  # JSConsumerWQRequiresExplicitAckErr
    CONSUMER_WQ_MULTIPLE_UNFILTERED = ErrorSpec(400, 10099, 'multiple non-filtered consumers not allowed on workqueue stream')  # JSConsumerWQMultipleUnfilteredErr
    CONSUMER_WQ_CONSUMER_NOT_UNIQUE = ErrorSpec(400, 10100, 'filtered consumer not unique on workqueue stream')  # JSConsumerWQConsumerNotUniqueErr
    CONSUMER_WQ_CONSUMER_NOT_DELIVER_ALL = ErrorSpec(400, 10101, 'consumer must be deliver all on workqueue stream')  # JSConsumerWQConsumerNotDeliverAllErr
    CONSUMER_NAME_TOO_LONG = ErrorSpec(400, 10102, 'consumer name is too long, maximum allowed is {max}')  # JSConsumerNameTooLongErrF
    CONSUMER_BAD_DURABLE_NAME = ErrorSpec(400, 10103, "durable name can not contain '.', '*', '>'")  # JSConsumerBadDurableNameErr
    CONSUMER_STORE_FAILED = ErrorSpec(500, 10104, 'error creating store for consumer: {err}')  # JSConsumerStoreFailedErrF
    CONSUMER_EXISTING_ACTIVE = ErrorSpec(400, 10105, 'consumer already exists and is still active')  # JSConsumerExistingActiveErr
    CONSUMER_REPLACEMENT_WITH_DIFFERENT_NAME = ErrorSpec(400, 10106, 'consumer replacement durable config not the same')  # JSConsumerReplacementWithDifferentNameErr
    CONSUMER_DESCRIPTION_TOO_LONG = ErrorSpec(400, 10107, 'consumer description is too long, maximum allowed is {max}')  # JSConsumerDescriptionTooLongErrF
    CONSUMER_WITH_FLOW_CONTROL_NEEDS_HEARTBEATS = ErrorSpec(400, 10108, 'consumer with flow control also needs heartbeats')  # JSConsumerWithFlowControlNeedsHeartbeats
    STREAM_SEALED = ErrorSpec(400, 10109, 'invalid operation on sealed stream')  # JSStreamSealedErr
    STREAM_PURGE_FAILED = ErrorSpec(500, 10110, '{err}')  # JSStreamPurgeFailedF
    STREAM_ROLLUP_FAILED = ErrorSpec(500, 10111, '{err}')  # JSStreamRollupFailedF
    CONSUMER_INVALID_DELIVER_SUBJECT = ErrorSpec(400, 10112, 'invalid push consumer deliver subject')  # JSConsumerInvalidDeliverSubject
    STREAM_MAX_BYTES_REQUIRED = ErrorSpec(400, 10113, 'account requires a stream config to have max bytes set')  # JSStreamMaxBytesRequired
    CONSUMER_MAX_REQUEST_BATCH_NEGATIVE = ErrorSpec(400, 10114, 'consumer max request batch needs to be > 0')  # JSConsumerMaxRequestBatchNegativeErr
    CONSUMER_MAX_REQUEST_EXPIRES_TOO_SMALL = ErrorSpec(400, 10115, 'consumer max request expires needs to be >= 1ms')  # JSConsumerMaxRequestExpiresTooSmall
    CONSUMER_MAX_DELIVER_BACKOFF = ErrorSpec(400, 10116, 'max deliver is required to be > length of backoff values')  # JSConsumerMaxDeliverBackoffErr
    STREAM_INFO_MAX_SUBJECTS = ErrorSpec(500, 10117, 'subject details would exceed maximum allowed')  # JSStreamInfoMaxSubjectsErr
    STREAM_OFFLINE = ErrorSpec(500, 10118, 'stream is offline')  # JSStreamOfflineErr
    CONSUMER_OFFLINE = ErrorSpec(500, 10119, 'consumer is offline')  # JSConsumerOfflineErr
    NO_LIMITS = ErrorSpec(400, 10120, 'no JetStream default or applicable tiered limit present')  # JSNoLimitsErr
    CONSUMER_MAX_PENDING_ACK_EXCESS = ErrorSpec(400, 10121, 'consumer max ack pending exceeds system limit of {limit}')  # JSConsumerMaxPendingAckExcessErrF
    STREAM_MAX_STREAM_BYTES_EXCEEDED = ErrorSpec(400, 10122, 'stream max bytes exceeds account limit max stream bytes')  # JSStreamMaxStreamBytesExceeded
    STREAM_MOVE_AND_SCALE = ErrorSpec(400, 10123, 'can not move and scale a stream in a single update')  # JSStreamMoveAndScaleErr
    STREAM_MOVE_IN_PROGRESS = ErrorSpec(400, 10124, 'stream move already in progress')  # JSStreamMoveInProgressErr
    CONSUMER_MAX_REQUEST_BATCH_EXCEEDED = ErrorSpec(400, 10125, 'consumer max request batch exceeds server limit of {limit}')  # JSConsumerMaxRequestBatchExceededF
    CONSUMER_REPLICAS_EXCEEDS_STREAM = ErrorSpec(400, 10126, 'consumer config replica count exceeds parent stream')  # JSConsumerReplicasExceedsStream
    CONSUMER_NAME_CONTAINS_PATH_SEPARATORS = ErrorSpec(400, 10127, 'Consumer name can not contain path separators')  # JSConsumerNameContainsPathSeparatorsErr
    STREAM_NAME_CONTAINS_PATH_SEPARATORS = ErrorSpec(400, 10128, 'Stream name can not contain path separators')  # JSStreamNameContainsPathSeparatorsErr
    STREAM_RECONFIGURE_NOT_IN_PROGRESS = ErrorSpec(400, 10129, 'stream reconfiguration not in progress')  # JSStreamReconfigureNotInProgressErr
    STREAM_NAME_EXIST_RESTORE_FAILED = ErrorSpec(400, 10130, 'stream name already in use, cannot restore')  # JSStreamNameExistRestoreFailedErr
    CONSUMER_CREATE_FILTER_SUBJECT_MISMATCH = ErrorSpec(400, 10131, 'Consumer create request did not match filtered subject from create subject')  # JSConsumerCreateFilterSubjectMismatchErr
    CONSUMER_CREATE_DURABLE_AND_NAME_MISMATCH = ErrorSpec(400, 10132, 'Consumer Durable and Name have to be equal if both are provided')  # JSConsumerCreateDurableAndNameMismatch
    REPLICAS_COUNT_CANNOT_BE_NEGATIVE = ErrorSpec(400, 10133, 'replicas count cannot be negative')  # JSReplicasCountCannotBeNegative
    CONSUMER_REPLICAS_SHOULD_MATCH_STREAM = ErrorSpec(400, 10134, "consumer config replicas must match interest retention stream's replicas")  # JSConsumerReplicasShouldMatchStream
    CONSUMER_METADATA_LENGTH = ErrorSpec(400, 10135, 'consumer metadata exceeds maximum size of {limit}')  # JSConsumerMetadataLengthErrF
    CONSUMER_DUPLICATE_FILTER_SUBJECTS = ErrorSpec(400, 10136, 'consumer cannot have both FilterSubject and FilterSubjects specified')  # JSConsumerDuplicateFilterSubjects
    CONSUMER_MULTIPLE_FILTERS_NOT_ALLOWED = ErrorSpec(400, 10137, 'consumer with multiple subject filters cannot use subject based API')  # JSConsumerMultipleFiltersNotAllowed
    CONSUMER_OVERLAPPING_SUBJECT_FILTERS = ErrorSpec(400, 10138, 'consumer subject filters cannot overlap')  # JSConsumerOverlappingSubjectFilters
    CONSUMER_EMPTY_FILTER = ErrorSpec(400, 10139, 'consumer filter in FilterSubjects cannot be empty')  # JSConsumerEmptyFilter
    SOURCE_DUPLICATE_DETECTED = ErrorSpec(400, 10140, 'duplicate source configuration detected')  # JSSourceDuplicateDetected
    SOURCE_INVALID_STREAM_NAME = ErrorSpec(400, 10141, 'sourced stream name is invalid')  # JSSourceInvalidStreamName
    MIRROR_INVALID_STREAM_NAME = ErrorSpec(400, 10142, 'mirrored stream name is invalid')  # JSMirrorInvalidStreamName
    MIRROR_WITH_FIRST_SEQ = ErrorSpec(400, 10143, 'stream mirrors can not have first sequence configured')  # JSMirrorWithFirstSeqErr
    SOURCE_MULTIPLE_FILTERS_NOT_ALLOWED = ErrorSpec(400, 10144, 'source with multiple subject transforms cannot also have a single subject filter')  # JSSourceMultipleFiltersNotAllowed
    SOURCE_INVALID_SUBJECT_FILTER = ErrorSpec(400, 10145, 'source transform source: {err}')  # JSSourceInvalidSubjectFilter
    SOURCE_INVALID_TRANSFORM_DESTINATION = ErrorSpec(400, 10146, 'source transform: {err}')  # JSSourceInvalidTransformDestination
    SOURCE_OVERLAPPING_SUBJECT_FILTERS = ErrorSpec(400, 10147, 'source filters can not overlap')  # JSSourceOverlappingSubjectFilters
    CONSUMER_ALREADY_EXISTS = ErrorSpec(400, 10148, 'consumer already exists')  # JSConsumerAlreadyExists
    CONSUMER_DOES_NOT_EXIST = ErrorSpec(400, 10149, 'consumer does not exist')  # JSConsumerDoesNotExist
    MIRROR_MULTIPLE_FILTERS_NOT_ALLOWED = ErrorSpec(400, 10150, 'mirror with multiple subject transforms cannot also have a single subject filter')  # JSMirrorMultipleFiltersNotAllowed
    MIRROR_INVALID_SUBJECT_FILTER = ErrorSpec(400, 10151, 'mirror transform source: {err}')  # JSMirrorInvalidSubjectFilter
    MIRROR_OVERLAPPING_SUBJECT_FILTERS = ErrorSpec(400, 10152, 'mirror subject filters can not overlap')  # JSMirrorOverlappingSubjectFilters
    CONSUMER_INACTIVE_THRESHOLD_EXCESS = ErrorSpec(400, 10153, 'consumer inactive threshold exceeds system limit of {limit}')  # JSConsumerInactiveThresholdExcess
    MIRROR_INVALID_TRANSFORM_DESTINATION = ErrorSpec(400, 10154, 'mirror transform: {err}')  # JSMirrorInvalidTransformDestination
    STREAM_TRANSFORM_INVALID_SOURCE = ErrorSpec(400, 10155, 'stream transform source: {err}')  # JSStreamTransformInvalidSource
    STREAM_TRANSFORM_INVALID_DESTINATION = ErrorSpec(400, 10156, 'stream transform: {err}')  # JSStreamTransformInvalidDestination
    PEDANTIC = ErrorSpec(400, 10157, 'pedantic mode: {err}')  # JSPedanticErrF
    STREAM_DUPLICATE_MESSAGE_CONFLICT = ErrorSpec(409, 10158, 'duplicate message id is in process')  # JSStreamDuplicateMessageConflict
    CONSUMER_PRIORITY_POLICY_WITHOUT_GROUP = ErrorSpec(400, 10159, 'Setting PriorityPolicy requires at least one PriorityGroup to be set')  # JSConsumerPriorityPolicyWithoutGroup
    CONSUMER_INVALID_PRIORITY_GROUP = ErrorSpec(400, 10160, 'Provided priority group does not exist for this consumer')  # JSConsumerInvalidPriorityGroupErr
    CONSUMER_EMPTY_GROUP_NAME = ErrorSpec(400, 10161, 'Group name cannot be an empty string')  # JSConsumerEmptyGroupName
    CONSUMER_INVALID_GROUP_NAME = ErrorSpec(400, 10162, 'Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters')  # JSConsumerInvalidGroupNameErr
    STREAM_EXPECTED_LAST_SEQ_PER_SUBJECT_NOT_READY = ErrorSpec(503, 10163, 'expected last sequence per subject temporarily unavailable')  # JSStreamExpectedLastSeqPerSubjectNotReady
    STREAM_WRONG_LAST_SEQUENCE_CONSTANT = ErrorSpec(400, 10164, 'wrong last sequence')  # JSStreamWrongLastSequenceConstantErr
    MESSAGE_TTL_INVALID = ErrorSpec(400, 10165, 'invalid per-message TTL')  # JSMessageTTLInvalidErr
    MESSAGE_TTL_DISABLED = ErrorSpec(400, 10166, 'per-message TTL is disabled')  # JSMessageTTLDisabledErr
    STREAM_TOO_MANY_REQUESTS = ErrorSpec(429, 10167, 'too many requests')  # JSStreamTooManyRequests
    MESSAGE_INCR_DISABLED = ErrorSpec(400, 10168, 'message counters is disabled')  # JSMessageIncrDisabledErr
    MESSAGE_INCR_MISSING = ErrorSpec(400, 10169, 'message counter increment is missing')  # JSMessageIncrMissingErr
    MESSAGE_INCR_PAYLOAD = ErrorSpec(400, 10170, 'message counter has payload')  # JSMessageIncrPayloadErr
    MESSAGE_INCR_INVALID = ErrorSpec(400, 10171, 'message counter increment is invalid')  # JSMessageIncrInvalidErr
    MESSAGE_COUNTER_BROKEN = ErrorSpec(400, 10172, 'message counter is broken')  # JSMessageCounterBrokenErr
    MIRROR_WITH_COUNTERS = ErrorSpec(400, 10173, 'stream mirrors can not also calculate counters')  # JSMirrorWithCountersErr
    ATOMIC_PUBLISH_DISABLED = ErrorSpec(400, 10174, 'atomic publish is disabled')  # JSAtomicPublishDisabledErr
    ATOMIC_PUBLISH_MISSING_SEQ = ErrorSpec(400, 10175, 'atomic publish sequence is missing')  # JSAtomicPublishMissingSeqErr
    ATOMIC_PUBLISH_INCOMPLETE_BATCH = ErrorSpec(400, 10176, 'atomic publish batch is incomplete')  # JSAtomicPublishIncompleteBatchErr
    ATOMIC_PUBLISH_UNSUPPORTED_HEADER_BATCH = ErrorSpec(400, 10177, 'atomic publish unsupported header used: {header}')  # JSAtomicPublishUnsupportedHeaderBatchErr
    CONSUMER_PUSH_WITH_PRIORITY_GROUP = ErrorSpec(400, 10178, 'priority groups can not be used with push consumers')  # JSConsumerPushWithPriorityGroupErr
    ATOMIC_PUBLISH_INVALID_BATCH_ID = ErrorSpec(400, 10179, 'atomic publish batch ID is invalid')  # JSAtomicPublishInvalidBatchIDErr
    STREAM_MIN_LAST_SEQ = ErrorSpec(412, 10180, 'min last sequence')  # JSStreamMinLastSeqErr
    CONSUMER_ACK_POLICY_INVALID = ErrorSpec(400, 10181, 'consumer ack policy invalid')  # JSConsumerAckPolicyInvalidErr
    CONSUMER_REPLAY_POLICY_INVALID = ErrorSpec(400, 10182, 'consumer replay policy invalid')  # JSConsumerReplayPolicyInvalidErr
    CONSUMER_ACK_WAIT_NEGATIVE = ErrorSpec(400, 10183, 'consumer ack wait needs to be positive')  # JSConsumerAckWaitNegativeErr
    CONSUMER_BACK_OFF_NEGATIVE = ErrorSpec(400, 10184, 'consumer backoff needs to be positive')  # JSConsumerBackOffNegativeErr
    REQUIRED_API_LEVEL = ErrorSpec(412, 10185, 'JetStream minimum api level required')  # JSRequiredApiLevelErr
    MIRROR_WITH_MSG_SCHEDULES = ErrorSpec(400, 10186, 'stream mirrors can not also schedule messages')  # JSMirrorWithMsgSchedulesErr
    SOURCE_WITH_MSG_SCHEDULES = ErrorSpec(400, 10187, 'stream source can not also schedule messages')  # JSSourceWithMsgSchedulesErr
    MESSAGE_SCHEDULES_DISABLED = ErrorSpec(400, 10188, 'message schedules is disabled')  # JSMessageSchedulesDisabledErr
    MESSAGE_SCHEDULES_PATTERN_INVALID = ErrorSpec(400, 10189, 'message schedules pattern is invalid')  # JSMessageSchedulesPatternInvalidErr
    MESSAGE_SCHEDULES_TARGET_INVALID = ErrorSpec(400, 10190, 'message schedules target is invalid')  # JSMessageSchedulesTargetInvalidErr
    MESSAGE_SCHEDULES_TTL_INVALID = ErrorSpec(400, 10191, 'message schedules invalid per-message TTL')  # JSMessageSchedulesTTLInvalidErr
    MESSAGE_SCHEDULES_ROLLUP_INVALID = ErrorSpec(400, 10192, 'message schedules invalid rollup')  # JSMessageSchedulesRollupInvalidErr
    STREAM_EXPECTED_LAST_SEQ_PER_SUBJECT_INVALID = ErrorSpec(400, 10193, 'missing sequence for expected last sequence per subject')  # JSStreamExpectedLastSeqPerSubjectInvalid
    STREAM_OFFLINE_REASON = ErrorSpec(500, 10194, 'stream is offline: {err}')  # JSStreamOfflineReasonErrF
    CONSUMER_OFFLINE_REASON = ErrorSpec(500, 10195, 'consumer is offline: {err}')  # JSConsumerOfflineReasonErrF
    CONSUMER_PRIORITY_GROUP_WITH_POLICY_NONE = ErrorSpec(400, 10196, 'consumer can not have priority groups when policy is none')  # JSConsumerPriorityGroupWithPolicyNone
    CONSUMER_PINNED_TTL_WITHOUT_PRIORITY_POLICY_NONE = ErrorSpec(400, 10197, 'PinnedTTL cannot be set when PriorityPolicy is none')  # JSConsumerPinnedTTLWithoutPriorityPolicyNone
    MIRROR_WITH_ATOMIC_PUBLISH = ErrorSpec(400, 10198, 'stream mirrors can not also use atomic publishing')  # JSMirrorWithAtomicPublishErr
    ATOMIC_PUBLISH_TOO_LARGE_BATCH = ErrorSpec(400, 10199, 'atomic publish batch is too large: {size}')  # JSAtomicPublishTooLargeBatchErrF
    ATOMIC_PUBLISH_INVALID_BATCH_COMMIT = ErrorSpec(400, 10200, 'atomic publish batch commit is invalid')  # JSAtomicPublishInvalidBatchCommitErr
    ATOMIC_PUBLISH_CONTAINS_DUPLICATE_MESSAGE = ErrorSpec(400, 10201, 'atomic publish batch contains duplicate message id')  # JSAtomicPublishContainsDuplicateMessageErr
    CLUSTER_SERVER_MEMBER_CHANGE_INFLIGHT = ErrorSpec(400, 10202, 'cluster member change is in progress')  # JSClusterServerMemberChangeInflightErr
    MESSAGE_SCHEDULES_SOURCE_INVALID = ErrorSpec(400, 10203, 'message schedules source is invalid')  # JSMessageSchedulesSourceInvalidErr
    CONSUMER_INVALID_RESET = ErrorSpec(400, 10204, 'invalid reset: {err}')  # JSConsumerInvalidResetErr
    BATCH_PUBLISH_DISABLED = ErrorSpec(400, 10205, 'batch publish is disabled')  # JSBatchPublishDisabledErr
    BATCH_PUBLISH_INVALID_PATTERN = ErrorSpec(400, 10206, 'batch publish pattern is invalid')  # JSBatchPublishInvalidPatternErr
    BATCH_PUBLISH_INVALID_BATCH_ID = ErrorSpec(400, 10207, 'batch publish ID is invalid')  # JSBatchPublishInvalidBatchIDErr
    BATCH_PUBLISH_UNKNOWN_BATCH_ID = ErrorSpec(400, 10208, 'batch publish ID unknown')  # JSBatchPublishUnknownBatchIDErr
    MIRROR_WITH_BATCH_PUBLISH = ErrorSpec(400, 10209, 'stream mirrors can not also use batch publishing')  # JSMirrorWithBatchPublishErr
    ATOMIC_PUBLISH_TOO_MANY_INFLIGHT = ErrorSpec(429, 10210, 'atomic publish too many inflight')  # JSAtomicPublishTooManyInflight
    BATCH_PUBLISH_TOO_MANY_INFLIGHT = ErrorSpec(429, 10211, 'batch publish too many inflight')  # JSBatchPublishTooManyInflight
    MESSAGE_SCHEDULES_SCHEDULER_INVALID = ErrorSpec(400, 10212, 'message schedules invalid scheduler')  # JSMessageSchedulesSchedulerInvalidErr
    MIRROR_DURABLE_CONSUMER_CFG_INVALID = ErrorSpec(400, 10213, 'stream mirror consumer config is invalid')  # JSMirrorDurableConsumerCfgInvalid
    MIRROR_CONSUMER_REQUIRES_ACK_FC = ErrorSpec(400, 10214, 'stream mirror consumer requires flow control ack policy')  # JSMirrorConsumerRequiresAckFCErr
    SOURCE_DURABLE_CONSUMER_CFG_INVALID = ErrorSpec(400, 10215, 'stream source consumer config is invalid')  # JSSourceDurableConsumerCfgInvalid
    SOURCE_DURABLE_CONSUMER_DUPLICATE_DETECTED = ErrorSpec(400, 10216, 'duplicate stream source consumer detected')  # JSSourceDurableConsumerDuplicateDetected
    SOURCE_CONSUMER_REQUIRES_ACK_FC = ErrorSpec(400, 10217, 'stream source consumer requires flow control ack policy')  # JSSourceConsumerRequiresAckFCErr
    CONSUMER_ACK_FC_REQUIRES_PUSH = ErrorSpec(400, 10218, 'flow control ack policy requires a push based consumer')  # JSConsumerAckFCRequiresPushErr
    CONSUMER_ACK_FC_REQUIRES_FC = ErrorSpec(400, 10219, 'flow control ack policy requires flow control')  # JSConsumerAckFCRequiresFCErr
    CONSUMER_ACK_FC_REQUIRES_MAX_ACK_PENDING = ErrorSpec(400, 10220, 'flow control ack policy requires max ack pending')  # JSConsumerAckFCRequiresMaxAckPendingErr
    CONSUMER_ACK_FC_REQUIRES_NO_ACK_WAIT = ErrorSpec(400, 10221, 'flow control ack policy requires unset ack wait')  # JSConsumerAckFCRequiresNoAckWaitErr
    CONSUMER_ACK_FC_REQUIRES_NO_MAX_DELIVER = ErrorSpec(400, 10222, 'flow control ack policy requires unset max deliver')  # JSConsumerAckFCRequiresNoMaxDeliverErr
    MESSAGE_SCHEDULES_TIME_ZONE_INVALID = ErrorSpec(400, 10223, 'message schedules time zone is invalid')  # JSMessageSchedulesTimeZoneInvalidErr
    CLUSTER_RESCUE = ErrorSpec(400, 10224, 'JetStream system rescue not applied: {err}')  # JSClusterRescueErr
    CONSUMER_STREAM_IDENTITY_MISMATCH = ErrorSpec(400, 10225, "consumer's stream identity does not match: {msg}")  # JSConsumerStreamIdentityMismatchF
    STREAM_RECONFIGURE_IN_PROGRESS = ErrorSpec(400, 10226, 'stream reconfiguration already in progress')  # JSStreamReconfigureInProgressErr
    MESSAGE_SOURCE_HDR_NOT_ALLOWED = ErrorSpec(400, 10227, 'message stream source header is not allowed')  # JSMessageSourceHdrNotAllowedErr


    @property
    def code(self) -> int:
        """The HTTP-like status code (400, 404, 500, 503, ...)."""
        return self.value.code

    @property
    def err_code(self) -> int:
        """nats-server's JetStream error code (10002 and up)."""
        return self.value.err_code

    @property
    def description(self) -> str:
        """The description as nats-server writes it, placeholders unfilled."""
        return self.value.description


class _Keep(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


class ApiError(Exception):
    """An API failure that becomes an error response (never a server crash)."""

    def __init__(self, error: Err, **fields: Any) -> None:
        spec = error.value
        description = spec.description.format_map(_Keep(fields)) if fields else spec.description
        super().__init__(description)
        self.error = error
        self.code = spec.code
        self.err_code = spec.err_code
        self.description = description

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "err_code": self.err_code, "description": self.description}


def client_reason(exc: BaseException, directory: Path | None = None) -> str:
    """A failure in words for a client: the OS's words, without absolute paths
    (`directory`, when named in the message, is shown by its own name)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    text = str(exc)
    if directory is not None:
        text = text.replace(str(directory), directory.name)
    return text
