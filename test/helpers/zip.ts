/** Reading a zip the api served. */
import * as yauzl from 'yauzl';

/** Every entry of the zip, in the archive's order, with its text. */
export function unzip(data: Buffer): Promise<[name: string, text: string][]> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(data, { lazyEntries: true }, (err, zip) => {
      if (err) return reject(err);
      const out: [string, string][] = [];
      zip.on('error', reject);
      zip.on('end', () => resolve(out));
      zip.on('entry', (entry: yauzl.Entry) => {
        zip.openReadStream(entry, (e, stream) => {
          if (e) return reject(e);
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('error', reject);
          stream.on('end', () => {
            out.push([entry.fileName, Buffer.concat(chunks).toString('utf8')]);
            zip.readEntry();
          });
        });
      });
      zip.readEntry();
    });
  });
}
