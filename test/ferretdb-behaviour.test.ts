/**
 * What FerretDB 1.24 does that real MongoDB does not, on the backend the tests run on (PostgreSQL by
 * default): each case is why a workaround in the code stays (docs/ferretdb.md). A case that
 * starts failing after an upgrade means its workaround can go.
 */
import { MongoClient, type Db } from 'mongodb';
import { isDuplicateKey } from '../src/store/errors';
import { testEnv, uniqueName } from './helpers/env';

const WRITERS = 6;
/**
 * Rounds of racing writers, until one shows the behaviour: a race is not lost every time (one run in
 * CI saw none in 30 rounds), and on MongoDB none of these rounds ever would.
 */
const MAX_ROUNDS = 300;

describe(`FerretDB (${process.env.FERRETDB_BACKEND || 'postgresql'} backend) behaviour the code works around`, () => {
  let clients: MongoClient[];
  let dbs: Db[];
  beforeAll(async () => {
    const name = uniqueName('ferretdb');
    // One connection per writer, so the updates really run side by side on the server.
    clients = await Promise.all(
      Array.from({ length: WRITERS }, () => new MongoClient(testEnv().mongoUri, { maxPoolSize: 1 }).connect()),
    );
    dbs = clients.map((c) => c.db(name));
  });
  afterAll(async () => {
    await dbs[0]?.dropDatabase();
    await Promise.all(clients.map((c) => c.close()));
  });

  it('a conditional update is not atomic: several writers win the same lease (leases are unique inserts)', async () => {
    let roundsWithSeveralWinners = 0;
    for (let round = 0; round < MAX_ROUNDS && roundsWithSeveralWinners === 0; round++) {
      await dbs[0]!.collection('leases').insertOne({ _id: `r${round}` as never, holder: null });
      const results = await Promise.all(
        dbs.map((db, i) =>
          db.collection('leases').updateOne({ _id: `r${round}` as never, holder: null }, { $set: { holder: i } }),
        ),
      );
      if (results.reduce((n, r) => n + r.modifiedCount, 0) > 1) roundsWithSeveralWinners++;
    }
    // On MongoDB exactly one writer wins each round.
    expect(roundsWithSeveralWinners).toBeGreaterThan(0);
  }, 60_000);

  it('an update that would break a unique index fails with InternalError (code 1) and SQLSTATE 23505, not E11000 (isDuplicateKey knows both)', async () => {
    const c = dbs[0]!.collection('unique_names');
    await c.createIndex({ owner: 1, name: 1 }, { unique: true, name: 'owner_name' });
    await c.insertMany([
      { owner: 'u', name: 'a' },
      { owner: 'u', name: 'b' },
    ]);
    const e = await c.updateOne({ owner: 'u', name: 'a' }, { $set: { name: 'b' } }).then(
      () => null,
      (err: unknown) => err,
    );
    // MongoDB answers code 11000 (DuplicateKey).
    expect(e).toMatchObject({ code: 1, codeName: 'InternalError' });
    if ((process.env.FERRETDB_BACKEND || 'postgresql') === 'postgresql')
      expect((e as Error).message).toMatch(/SQLSTATE 23505/);
    expect(isDuplicateKey(e)).toBe(true);
    // An insert that breaks it is E11000, as on MongoDB.
    const inserted = await c.insertOne({ owner: 'u', name: 'b' }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(inserted).toMatchObject({ code: 11000 });
  });

  it("an update rewrites the whole document: concurrent updates of different fields undo each other's (one writer per document)", async () => {
    let lost = 0;
    for (let round = 0; round < MAX_ROUNDS && lost === 0; round++) {
      await dbs[0]!.collection('docs').insertOne({ _id: `d${round}` as never });
      await Promise.all(
        dbs.map((db, i) => db.collection('docs').updateOne({ _id: `d${round}` as never }, { $set: { [`f${i}`]: i } })),
      );
      const doc = (await dbs[0]!.collection('docs').findOne({ _id: `d${round}` as never }))!;
      for (let i = 0; i < WRITERS; i++) if (doc[`f${i}`] !== i) lost++;
    }
    expect(lost).toBeGreaterThan(0); // MongoDB keeps every field of every round
  }, 60_000);
});
