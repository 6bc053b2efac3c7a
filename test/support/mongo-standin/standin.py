#!/usr/bin/python3
"""The MongoDB stand-in for tests: the real Node driver talks the MongoDB wire protocol to this
process, which answers with mongomock, an in-memory MongoDB query engine.

No real mongod can be installed on the CI machine, so this bridge lets every Mongo adapter run
over TCP, through mongoose and the official driver, with unique/partial/compound indexes,
duplicate-key errors (code 11000 with keyPattern/keyValue) and unordered bulk writes.
It is NOT MongoDB: see the README's "MongoDB stand-in" section for what it does not prove.

Usage: /usr/bin/python3 standin.py [port]   (0 or absent: a free port)
Prints "listening <port>" on stdout once it accepts connections; exits when stdin closes, so a
test run that dies cannot leave it behind.
"""
import datetime
import itertools
import os
import select
import socket
import struct
import sys
import threading
import time
import weakref
from collections import OrderedDict

import bson
import mongomock
import mongomock.collection
from bson.int64 import Int64
from bson.objectid import ObjectId
import mockupdb
from mockupdb import OP_MSG, MockupDB, OpMsg, Request
from pymongo.errors import DuplicateKeyError, OperationFailure

# The Node driver 6 needs at least wire version 7 (MongoDB 4.0); 17 is MongoDB 6.0.
MAX_WIRE_VERSION = 17
# Fields every command may carry that mean nothing to an in-memory engine.
ENVELOPE = {'$db', 'lsid', '$clusterTime', '$readPreference', 'writeConcern', 'readConcern',
            'txnNumber', 'autocommit', 'startTransaction', 'apiVersion', 'comment', 'maxTimeMS'}

engine = mongomock.MongoClient()


def _client_port(self):
    # mockupdb asks getpeername() for a log line, which fails once the client hung up; a
    # disconnected client is normal here (the driver closes pools), not an error to print.
    try:
        return self._client.getpeername()[1]
    except OSError:
        return 0


Request.client_port = property(_client_port)

# OP_MSG flag bits (the wire protocol's): mockupdb has exhaustAllowed as bit 4 where MongoDB has it
# as bit 16, so it refused the driver's streaming heartbeats as "reserved bits set".
MORE_TO_COME = 1 << 1
EXHAUST_ALLOWED = 1 << 16
mockupdb._ALL_OP_MSG_FLAGS |= EXHAUST_ALLOWED


def _ensure_uniques(self, new_data):
    """mongomock's check, raising with the keyPattern/keyValue MongoDB puts on its error."""
    # An update changed the stored document in place: hash it anew first, or the lookup below
    # would not find it under its new values and would count one match too few.
    if '_id' in new_data:
        touch(self, [new_data['_id']])
    for name, index in self._store.indexes.items():
        if not index.get('unique'):
            continue
        keys = index.get('key')
        values = OrderedDict()
        for key, _ in keys:
            try:
                values[key] = mongomock.helpers.get_value_by_dot(new_data, key)
            except KeyError:
                values[key] = None
        if index.get('sparse') and set(values.values()) == {None}:
            continue
        # The key's values as the filter, so the lookup acceleration below narrows it (a top-level
        # $and would make every insert scan the whole collection); the partial filter after.
        matches = self._iter_documents(dict(values))
        partial = index.get('partialFilterExpression')
        if partial is not None:
            matches = (doc for doc in matches if mongomock.filtering.filter_applies(partial, doc))
        if len(list(matches)) > 1:
            raise DuplicateKeyError(
                'E11000 duplicate key error collection: %s index: %s dup key: %r'
                % (self.full_name, name, dict(values)), 11000,
                {'keyPattern': OrderedDict((k, d) for k, d in keys), 'keyValue': values})


mongomock.collection.Collection._ensure_uniques = _ensure_uniques


_original_create_index = mongomock.collection.Collection.create_index


def _create_index(self, key_or_list, cache_for=300, session=None, **kwargs):
    """mongomock checks a new unique index against every document; MongoDB checks a partial one
    only against the documents its filter selects (a unique (tenant_id, seq) where seq exists builds
    over events that have no seq)."""
    partial = kwargs.get('partialFilterExpression')
    if not (kwargs.get('unique') and partial is not None):
        return _original_create_index(self, key_or_list, cache_for, session, **kwargs)
    index_list = mongomock.helpers.create_index_list(key_or_list)
    name = kwargs.get('name') or mongomock.helpers.gen_index_name(index_list)
    index_dict = {'key': index_list, 'unique': True, 'partialFilterExpression': partial}
    if kwargs.get('sparse'):
        index_dict['sparse'] = True
    if kwargs.get('expireAfterSeconds') is not None:
        index_dict['expireAfterSeconds'] = kwargs['expireAfterSeconds']
    existing = self._store.indexes.get(name)
    if existing and existing != index_dict:
        raise OperationFailure('Index with name: %s already exists with different options' % name)
    seen = set()
    for doc in self._iter_documents(partial):
        values = []
        for key, _ in index_list:
            try:
                values.append(repr(mongomock.helpers.get_value_by_dot(doc, key)))
            except KeyError:
                values.append(repr(None))
        if tuple(values) in seen:
            raise DuplicateKeyError('E11000 duplicate key error collection: %s index: %s'
                                    % (self.full_name, name), 11000)
        seen.add(tuple(values))
    self._store.create_index(name, index_dict)
    return name


mongomock.collection.Collection.create_index = _create_index


# --- Lookup acceleration -------------------------------------------------------------------------
# mongomock evaluates every filter against every document (about 8 µs each): with the thousands of
# events and mandates of the end-to-end and fault suites, one command at a time, that queues
# requests into timeouts. So: a hash of top-level string and number fields the filters compare by
# equality ({tenant_id: 't'}, {_id: {$in: [...]}}, the unique check's {tenant_id: 't', seq: 7}),
# kept as documents are stored and deleted. Numbers matter as MongoDB's index does: without them,
# each insert's unique (tenant_id, seq) check scanned every event of the tenant, so storing a
# tenant's events cost O(n) each and a backlog of a few thousand took minutes. It only narrows
# which documents the real filter is evaluated on, so it changes speed, never results; updates
# change documents in place, so the commands that update re-store what they touched (`touch`).
CollectionStore = mongomock.store.CollectionStore
_original_setitem = CollectionStore.__setitem__
_original_delitem = CollectionStore.__delitem__
_original_drop = CollectionStore.drop


def _hash_state(store):
    if not hasattr(store, '_standin_hash'):
        # field -> value -> keys; and per key its hashed values, to unhash on change.
        store._standin_hash = {}
        store._standin_keys = {}
    return store._standin_hash, store._standin_keys


def _unhash(store, key):
    hashes, keys = _hash_state(store)
    for field, value in keys.pop(key, {}).items():
        hashes[field].get(value, set()).discard(key)


def _hashable(value):
    """A value equality can find by hash: strings and numbers (1 and 1.0 hash alike, as MongoDB
    compares them); never booleans (True == 1 in Python, not in MongoDB) nor NaN."""
    if isinstance(value, bool):
        return False
    if isinstance(value, float):
        return value == value
    return isinstance(value, (str, int))


def _mixed(store):
    """Fields some document holds as an array or object: {field: v} matches inside an array in
    MongoDB, which no hash of whole values finds, so those fields are never narrowed."""
    if not hasattr(store, '_standin_mixed'):
        store._standin_mixed = set()
    return store._standin_mixed


def _hash(store, key, doc):
    hashes, keys = _hash_state(store)
    entry = {}
    for field, by_value in hashes.items():
        value = doc.get(field)
        if isinstance(value, (list, dict)):
            _mixed(store).add(field)
        if _hashable(value):
            by_value.setdefault(value, set()).add(key)
            entry[field] = value
    keys[key] = entry


_next_position = iter(range(1 << 62))


def _setitem(self, key, val):
    _original_setitem(self, key, val)
    _unhash(self, key)
    _hash(self, key, val)
    # Stored order, so narrowed reads come back in the order a scan would give.
    self._standin_positions = getattr(self, '_standin_positions', {})
    self._standin_positions.setdefault(key, next(_next_position))


def _delitem(self, key):
    _original_delitem(self, key)
    _unhash(self, key)
    getattr(self, '_standin_positions', {}).pop(key, None)


def _drop(self):
    _original_drop(self)
    self._standin_hash, self._standin_keys, self._standin_positions = {}, {}, {}
    self._standin_mixed = set()


CollectionStore.__setitem__ = _setitem
CollectionStore.__delitem__ = _delitem
CollectionStore.drop = _drop


def _store_key(doc_id):
    return mongomock.helpers.hashdict(doc_id) if isinstance(doc_id, dict) else doc_id


def _candidate_keys(store, filter):
    """The keys of the only documents that can match, or None (evaluate them all)."""
    if not isinstance(filter, dict):
        return None
    best = None
    for field, condition in filter.items():
        if field.startswith('$') or '.' in field:
            continue
        if _hashable(condition):
            values = [condition]
        elif (isinstance(condition, dict) and list(condition) == ['$in']
              and all(_hashable(v) for v in condition['$in'])):
            values = condition['$in']
        else:
            continue
        hashes, keys = _hash_state(store)
        if field not in hashes:
            hashes[field] = {}
            for key, doc in store._documents.items():
                value = doc.get(field)
                if isinstance(value, (list, dict)):
                    _mixed(store).add(field)
                if _hashable(value):
                    hashes[field].setdefault(value, set()).add(key)
                    keys.setdefault(key, {})[field] = value
        # _id values are the store's keys themselves.
        if field in _mixed(store):
            continue
        found = set()
        for v in values:
            found |= hashes[field].get(v, set())
        if best is None or len(found) < len(best):
            best = found
    return best


def _iter_documents(self, filter):
    keys = _candidate_keys(self._store, filter)
    if keys is None:
        return _original_iter_documents(self, filter)
    self._store._remove_expired_documents()
    documents = self._store._documents
    positions = getattr(self._store, '_standin_positions', {})
    ordered = sorted((k for k in keys if k in documents), key=lambda k: positions.get(k, 0))
    candidates = [documents[k] for k in ordered]
    return (doc for doc in candidates if mongomock.filtering.filter_applies(filter, doc))


_original_iter_documents = mongomock.collection.Collection._iter_documents
mongomock.collection.Collection._iter_documents = _iter_documents


def touch(coll, doc_ids):
    """Re-hashes documents an update changed in place."""
    store = coll._store
    for doc_id in doc_ids:
        key = _store_key(doc_id)
        doc = store._documents.get(key)
        if doc is not None:
            _unhash(store, key)
            _hash(store, key, doc)


def error_reply(err):
    if isinstance(err, DuplicateKeyError):
        details = err.details or {}
        return {'ok': 0, 'code': 11000, 'codeName': 'DuplicateKey', 'errmsg': str(err),
                'keyPattern': details.get('keyPattern', {'_id': 1}),
                'keyValue': details.get('keyValue', {})}
    if isinstance(err, OperationFailure):
        return {'ok': 0, 'code': err.code or 2, 'errmsg': str(err)}
    # Anything mongomock cannot do (arrayFilters, pipeline updates, …) fails loudly, not silently.
    return {'ok': 0, 'code': 2, 'codeName': 'BadValue', 'errmsg': 'stand-in: %s: %s' % (type(err).__name__, err)}


def write_error(index, err):
    reply = error_reply(err)
    entry = {'index': index, 'code': reply['code'], 'errmsg': reply['errmsg']}
    for key in ('keyPattern', 'keyValue'):
        if key in reply:
            entry[key] = reply[key]
    return entry


def cursor_reply(ns, docs):
    # One batch holding everything (cursor id 0): no getMore state to keep between commands.
    return {'cursor': {'id': Int64(0), 'ns': ns, 'firstBatch': list(docs)}, 'ok': 1}


# What MongoDB >= 4.4 sends in every hello: this process's id and a counter that only a topology
# change would raise (a standalone server never changes). The driver streams its heartbeats when it
# sees it (an awaitable hello, below), and resets its server monitor after a network error only when
# the server it lost had one: without it, a monitor check stuck on a dead socket stays stuck.
TOPOLOGY_VERSION = OrderedDict([('processId', ObjectId()), ('counter', Int64(0))])
# Per connection, as MongoDB numbers them; the driver reports it in its heartbeat events.
_connection_ids = weakref.WeakKeyDictionary()
_next_connection_id = itertools.count(1)
_stopping = threading.Event()


def connection_id(request):
    client = request._client
    if client not in _connection_ids:
        _connection_ids[client] = next(_next_connection_id)
    return _connection_ids[client]


def hello_reply(request, name):
    """A standalone MongoDB 6.0's answer: `hello` says isWritablePrimary, the legacy isMaster says
    ismaster (and helloOk when the client asked, so it says `hello` from then on)."""
    reply = OrderedDict()
    if name == 'hello':
        reply['isWritablePrimary'] = True
    else:
        reply['ismaster'] = True
        if request.doc.get('helloOk'):
            reply['helloOk'] = True
    reply.update([
        ('topologyVersion', TOPOLOGY_VERSION),
        ('maxBsonObjectSize', 16 * 1024 * 1024), ('maxMessageSizeBytes', 48000000),
        ('maxWriteBatchSize', 100000), ('localTime', datetime.datetime.utcnow()),
        ('logicalSessionTimeoutMinutes', 30), ('connectionId', connection_id(request)),
        ('minWireVersion', 0), ('maxWireVersion', MAX_WIRE_VERSION), ('readOnly', False), ('ok', 1.0),
    ])
    return reply


def is_current(topology_version):
    return (isinstance(topology_version, dict)
            and topology_version.get('processId') == TOPOLOGY_VERSION['processId']
            and int(topology_version.get('counter', -1)) >= int(TOPOLOGY_VERSION['counter']))


def client_gone(sock, seconds):
    """Waits up to `seconds` for the client to hang up (True) or the stand-in to stop (True);
    False when the time ran out with the connection still open."""
    deadline = time.monotonic() + seconds
    while not _stopping.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            readable, _, _ = select.select([sock], [], [], min(left, 0.5))
            if readable and sock.recv(1, socket.MSG_PEEK) == b'':
                return True
        except (OSError, ValueError):
            return True
    return True


def send_op_msg(sock, response_to, doc, flags):
    """One OP_MSG reply; returns its requestID, which the next reply of a stream answers to."""
    request_id = next(_next_request_id)
    body = struct.pack('<Ib', flags, 0) + bson.BSON.encode(doc)
    sock.sendall(struct.pack('<iiii', 16 + len(body), request_id, response_to, OP_MSG) + body)
    return request_id


_next_request_id = itertools.count(1 << 20)


def awaitable_hello(request, name):
    """The streaming protocol of MongoDB 4.4+: a hello carrying the client's topologyVersion and
    maxAwaitTimeMS is answered at once when that version is not the current one, otherwise when the
    topology changes or maxAwaitTimeMS has passed. With the exhaustAllowed flag each reply sets
    moreToCome (answering the previous one) and the server goes on answering every maxAwaitTimeMS,
    with no further request, until the client hangs up. The wait releases mockupdb's server lock, so
    the other connections are served meanwhile."""
    wait_s = max(0, int(request.doc['maxAwaitTimeMS'])) / 1000.0
    exhaust = isinstance(request, OpMsg) and bool(request.flags & EXHAUST_ALLOWED)
    if not exhaust:
        if is_current(request.doc['topologyVersion']):
            with request._server._unlock():
                client_gone(request._client, wait_s)
        request.replies(hello_reply(request, name))
        return
    sock, response_to = request._client, request.request_id
    with request._server._unlock():
        immediate = not is_current(request.doc['topologyVersion'])
        try:
            while immediate or not client_gone(sock, wait_s):
                immediate = False
                response_to = send_op_msg(sock, response_to, hello_reply(request, name),
                                          MORE_TO_COME)
        except OSError:
            pass
    # The client hung up: closed here, so the server loop's next read ends this connection.
    try:
        sock.close()
    except OSError:
        pass


def is_update_document(update):
    return isinstance(update, dict) and len(update) > 0 and all(k.startswith('$') for k in update)


def cmd_insert(db, cmd):
    coll = db[cmd['insert']]
    ordered = cmd.get('ordered', True)
    n, errors = 0, []
    for i, doc in enumerate(cmd.get('documents', [])):
        try:
            coll.insert_one(doc)
            n += 1
        except Exception as err:  # noqa: BLE001 — becomes a write error, like MongoDB's
            errors.append(write_error(i, err))
            if ordered:
                break
    reply = {'n': n, 'ok': 1}
    if errors:
        reply['writeErrors'] = errors
    return reply


def cmd_update(db, cmd):
    coll = db[cmd['update']]
    ordered = cmd.get('ordered', True)
    n, modified, upserted, errors = 0, 0, [], []
    for i, spec in enumerate(cmd.get('updates', [])):
        try:
            q, u, upsert = spec.get('q', {}), spec['u'], spec.get('upsert', False)
            if isinstance(u, list):
                raise NotImplementedError('pipeline updates are not supported by the stand-in')
            matched = [d['_id'] for d in coll._iter_documents(q)]
            try:
                if not is_update_document(u):
                    result = coll.replace_one(q, u, upsert=upsert)
                elif spec.get('multi'):
                    result = coll.update_many(q, u, upsert=upsert, array_filters=spec.get('arrayFilters'))
                else:
                    result = coll.update_one(q, u, upsert=upsert, array_filters=spec.get('arrayFilters'))
            finally:
                touch(coll, matched)
            n += result.matched_count
            modified += result.modified_count
            if result.upserted_id is not None:
                n += 1
                upserted.append({'index': i, '_id': result.upserted_id})
        except Exception as err:  # noqa: BLE001
            errors.append(write_error(i, err))
            if ordered:
                break
    reply = {'n': n, 'nModified': modified, 'ok': 1}
    if upserted:
        reply['upserted'] = upserted
    if errors:
        reply['writeErrors'] = errors
    return reply


def cmd_delete(db, cmd):
    coll = db[cmd['delete']]
    n = 0
    for spec in cmd.get('deletes', []):
        if spec.get('limit', 0) == 1:
            n += coll.delete_one(spec.get('q', {})).deleted_count
        else:
            n += coll.delete_many(spec.get('q', {})).deleted_count
    return {'n': n, 'ok': 1}


def sort_list(sort):
    return list(sort.items()) if sort else None


def cmd_find(db, cmd):
    coll = db[cmd['find']]
    projection = cmd.get('projection') or None
    cursor = coll.find(cmd.get('filter', {}), projection)
    if cmd.get('sort'):
        cursor = cursor.sort(sort_list(cmd['sort']))
    if cmd.get('skip'):
        cursor = cursor.skip(cmd['skip'])
    if cmd.get('limit'):
        cursor = cursor.limit(abs(cmd['limit']))
    return cursor_reply('%s.%s' % (db.name, cmd['find']), cursor)


def cmd_find_and_modify(db, cmd):
    """By _id once the match is found: mongomock's own find_one_and_update searches again with the
    original filter after updating, so a versioned update ({version: 1} → $set version 2) with
    `_id` projected out came back null although it applied."""
    coll = db[cmd.get('findAndModify') or cmd.get('findandmodify')]
    query, fields, sort = cmd.get('query', {}), cmd.get('fields') or None, sort_list(cmd.get('sort'))
    found = coll.find_one(query, {'_id': 1}, sort=sort)
    if cmd.get('remove'):
        if found is None:
            return {'lastErrorObject': {'n': 0}, 'value': None, 'ok': 1}
        value = coll.find_one({'_id': found['_id']}, fields)
        coll.delete_one({'_id': found['_id']})
        return {'lastErrorObject': {'n': 1}, 'value': value, 'ok': 1}
    update, upsert = cmd['update'], cmd.get('upsert', False)
    if isinstance(update, list) or cmd.get('arrayFilters'):
        raise NotImplementedError('pipeline updates and arrayFilters are not supported by the stand-in')
    if found is None and not upsert:
        return {'lastErrorObject': {'n': 0, 'updatedExisting': False}, 'value': None, 'ok': 1}
    before = None if found is None else coll.find_one({'_id': found['_id']}, fields)
    write = coll.update_one if is_update_document(update) else coll.replace_one
    if found is None:
        result = write(query, update, upsert=True)
        _id = result.upserted_id
        last = {'n': 1, 'updatedExisting': False, 'upserted': _id}
    else:
        _id = found['_id']
        write({'_id': _id}, update)
        touch(coll, [_id])
        last = {'n': 1, 'updatedExisting': True}
    value = coll.find_one({'_id': _id}, fields) if cmd.get('new') else before
    return {'lastErrorObject': last, 'value': value, 'ok': 1}


def cmd_count(db, cmd):
    coll = db[cmd['count']]
    kwargs = {k: cmd[k] for k in ('skip', 'limit') if cmd.get(k)}
    return {'n': coll.count_documents(cmd.get('query') or {}, **kwargs), 'ok': 1}


def cmd_aggregate(db, cmd):
    coll = db[cmd['aggregate']]
    return cursor_reply('%s.%s' % (db.name, cmd['aggregate']), coll.aggregate(cmd.get('pipeline', [])))


def cmd_distinct(db, cmd):
    return {'values': db[cmd['distinct']].distinct(cmd['key'], cmd.get('query') or {}), 'ok': 1}


def cmd_create_indexes(db, cmd):
    coll = db[cmd['createIndexes']]
    if cmd['createIndexes'] not in db.list_collection_names():
        db.create_collection(cmd['createIndexes'])
    before = len(coll.index_information())
    for spec in cmd.get('indexes', []):
        options = {k: v for k, v in spec.items() if k in ('name', 'unique', 'sparse', 'expireAfterSeconds',
                                                           'partialFilterExpression')}
        coll.create_index(list(spec['key'].items()), **options)
    return {'numIndexesBefore': before, 'numIndexesAfter': len(coll.index_information()), 'ok': 1}


def cmd_list_indexes(db, cmd):
    name = cmd['listIndexes']
    if name not in db.list_collection_names():
        return {'ok': 0, 'code': 26, 'codeName': 'NamespaceNotFound', 'errmsg': 'ns does not exist: %s' % name}
    indexes = []
    for index_name, info in db[name].index_information().items():
        entry = {'v': 2, 'key': OrderedDict(info['key']), 'name': index_name}
        for option in ('unique', 'sparse', 'expireAfterSeconds', 'partialFilterExpression'):
            if option in info:
                entry[option] = info[option]
        indexes.append(entry)
    return cursor_reply('%s.%s' % (db.name, name), indexes)


def cmd_list_collections(db, cmd):
    names = db.list_collection_names()
    wanted = (cmd.get('filter') or {}).get('name')
    if isinstance(wanted, str):
        names = [n for n in names if n == wanted]
    docs = [{'name': n, 'type': 'collection', 'options': {}, 'info': {'readOnly': False}} for n in names]
    if cmd.get('nameOnly'):
        docs = [{'name': d['name'], 'type': 'collection'} for d in docs]
    return cursor_reply('%s.$cmd.listCollections' % db.name, docs)


def cmd_create(db, cmd):
    if cmd['create'] in db.list_collection_names():
        return {'ok': 0, 'code': 48, 'codeName': 'NamespaceExists',
                'errmsg': 'Collection %s.%s already exists.' % (db.name, cmd['create'])}
    db.create_collection(cmd['create'])
    return {'ok': 1}


def cmd_drop(db, cmd):
    if cmd['drop'] not in db.list_collection_names():
        return {'ok': 0, 'code': 26, 'codeName': 'NamespaceNotFound', 'errmsg': 'ns not found'}
    db.drop_collection(cmd['drop'])
    return {'ok': 1}


def cmd_drop_database(db, _cmd):
    engine.drop_database(db.name)
    return {'dropped': db.name, 'ok': 1}


def ok(_db, _cmd):
    return {'ok': 1}


COMMANDS = {
    'ping': ok, 'endSessions': ok, 'killCursors': ok,
    'buildInfo': lambda _db, _cmd: {'version': '6.0.0-stand-in', 'versionArray': [6, 0, 0, 0], 'ok': 1},
    'buildinfo': lambda _db, _cmd: {'version': '6.0.0-stand-in', 'versionArray': [6, 0, 0, 0], 'ok': 1},
    'insert': cmd_insert, 'update': cmd_update, 'delete': cmd_delete, 'find': cmd_find,
    'findAndModify': cmd_find_and_modify, 'findandmodify': cmd_find_and_modify,
    'count': cmd_count, 'aggregate': cmd_aggregate, 'distinct': cmd_distinct,
    'createIndexes': cmd_create_indexes, 'listIndexes': cmd_list_indexes,
    'listCollections': cmd_list_collections, 'create': cmd_create, 'drop': cmd_drop,
    'dropDatabase': cmd_drop_database,
}


HELLO_COMMANDS = {'hello', 'ismaster', 'isMaster'}


def handle(request):
    """mockupdb calls this for every request, one at a time (its server lock is held)."""
    name = request.command_name
    command = OrderedDict((k, v) for k, v in request.doc.items() if k not in ENVELOPE)
    db_name = request.doc.get('$db') or (request.namespace or 'admin').split('.')[0]
    if name in HELLO_COMMANDS:
        if 'topologyVersion' in request.doc and 'maxAwaitTimeMS' in request.doc:
            awaitable_hello(request, name)
        else:
            request.replies(hello_reply(request, name))
        return True
    handler = COMMANDS.get(name)
    if handler is None:
        reply = {'ok': 0, 'code': 59, 'codeName': 'CommandNotFound',
                 'errmsg': 'no such command on the stand-in: %s' % name}
    else:
        try:
            reply = timed(name, command, lambda: handler(engine[db_name], command))
        except Exception as err:  # noqa: BLE001 — every failure goes back to the client
            reply = error_reply(err)
    request.replies(reply)
    return True


_timings = None


def shape_of(value):
    if isinstance(value, dict):
        return '{%s}' % ','.join('%s:%s' % (k, shape_of(v)) if k.startswith('$') or isinstance(v, dict) else k
                                 for k, v in value.items())
    return '?'


def timed(name, command, run):
    """STANDIN_PROFILE=<file>: the time spent per command, collection and filter shape, written to
    <file> every 5 s (a debugging aid; off by default)."""
    if _timings is None:
        return run()
    started = time.perf_counter()
    try:
        return run()
    finally:
        spent = time.perf_counter() - started
        coll = command.get(name)
        what = command.get('filter') or command.get('query') or command.get('updates') or command.get('pipeline')
        if isinstance(what, list):
            what = what[0] if what else None
            if isinstance(what, dict) and 'q' in what:
                what = what['q']
        key = '%s %s %s%s' % (name, coll, shape_of(what) if what is not None else '',
                              ' sort=%s' % shape_of(command['sort']) if command.get('sort') else '')
        entry = _timings.setdefault(key, [0, 0.0])
        entry[0] += 1
        entry[1] += spent


def profile_to(path):
    global _timings
    _timings = {}

    def dump():
        while not _stopping.wait(5):
            # The other worker's stand-in, idle when one suite runs, must not blank the file.
            if not _timings:
                continue
            rows = sorted(_timings.items(), key=lambda kv: -kv[1][1])
            with open(path, 'w') as out:
                out.write('total %.1fs\n' % sum(v[1] for v in _timings.values()))
                for key, (n, spent) in rows[:40]:
                    out.write('%8.2fs %7d %8.2fms  %s\n' % (spent, n, 1000 * spent / n, key))
    threading.Thread(target=dump, daemon=True).start()


def main():
    if os.environ.get('STANDIN_PROFILE'):
        profile_to(os.environ['STANDIN_PROFILE'])
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = MockupDB(port=port or None, request_timeout=int(1e6))
    server._address = ('127.0.0.1', port or None)  # IPv4 only, whatever 'localhost' resolves to
    server.autoresponds(handle)
    bound = server.run()
    print('listening %d' % bound, flush=True)
    # The parent holds our stdin: when it exits (even killed), stdin reaches EOF and we stop.
    threading.Thread(target=lambda: (sys.stdin.read(), _stopping.set(), server.stop()), daemon=True).start()
    try:
        while server.running:
            threading.Event().wait(0.5)
    except KeyboardInterrupt:
        server.stop()


if __name__ == '__main__':
    main()
